package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/storage"
)

const providerUse = `usage:
  ferry provider add ID --kind openai|anthropic --base-url URL --model NAME [--api-key-stdin] [--api-key-env VAR]
                        [--context-window N] [--max-tokens N] [--no-vision] [--default]
                        [--stream-usage auto|on|off] [--max-tokens-field auto|max_tokens|max_completion_tokens]
                        [--api-version VERSION] [--send-reasoning auto|on|off] [--prompt-cache auto|on|off]
  ferry provider list [--json]
  ferry provider remove ID
  ferry provider test [ID] [--json]
  ferry provider default ID

add of an existing ID updates it: flags not given keep their values, and the stored
key stays unless --api-key-stdin gives a new one. The request options (auto: detected
from the base URL and the model) are for servers detection does not know; test says
which it settled on, and stores what a refusal taught it.`

func cmdProvider(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, providerUse)
		return 2
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "add":
		return providerAdd(rest, os.Stdin, stdout, stderr)
	case "list":
		return providerList(rest, stdout, stderr)
	case "remove", "rm":
		return providerRemove(rest, stdout, stderr)
	case "test":
		return providerTest(rest, stdout, stderr)
	case "default":
		return providerDefault(rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "ferry provider: unknown subcommand %q\n%s\n", sub, providerUse)
	return 2
}

// splitID takes the one positional ID from before or after the flags (flag stops at
// the first non-flag, and people write the ID first).
func splitID(fs *flag.FlagSet, args []string) (id string, err error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		if id != "" || fs.NArg() > 1 {
			return "", fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		id = fs.Arg(0)
	}
	return id, nil
}

func providerAdd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("provider add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "wire format: openai (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp, LM Studio…) or anthropic")
	baseURL := fs.String("base-url", "", "API base URL, e.g. https://api.openai.com/v1, http://localhost:11434/v1, https://api.anthropic.com")
	modelName := fs.String("model", "", "model name, e.g. gpt-4o-mini, deepseek-chat, claude-sonnet-4-5")
	keyStdin := fs.Bool("api-key-stdin", false, "read the API key from stdin and store it as a host secret")
	keyEnv := fs.String("api-key-env", "", "read the API key from this environment variable instead (\"\" to stop)")
	ctxWin := fs.Int("context-window", 0, "the model's context window in tokens (default: by kind)")
	maxTok := fs.Int("max-tokens", 0, "longest answer asked for, in tokens (default: by kind)")
	makeDefault := fs.Bool("default", false, "make this the default provider")
	noVision := fs.Bool("no-vision", false, "the model takes no images (text-only): screenshots are left out and the model is told so (--no-vision=false: it takes images)")
	streamUsage := fs.String("stream-usage", "", "send stream_options.include_usage: auto (off for Mistral, Fireworks, old Azure versions), on, off")
	maxField := fs.String("max-tokens-field", "", "the length field: auto (max_completion_tokens on api.openai.com, Azure and o1/o3/o4/gpt-5 models), max_tokens, max_completion_tokens")
	apiVersion := fs.String("api-version", "", "classic Azure OpenAI: the api-version sent as a query (and the key in an api-key header); the base URL ends …/openai/deployments/NAME")
	sendReasoning := fs.String("send-reasoning", "", "send each assistant turn's reasoning back as reasoning_content: auto (on for DeepSeek), on, off")
	promptCache := fs.String("prompt-cache", "", "Anthropic prompt-cache breakpoints on tools, system prompt and conversation: auto (on), on, off")
	fs.Usage = func() { fmt.Fprintln(stderr, providerUse); fs.PrintDefaults() }
	id, err := splitID(fs, args)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "ferry provider add:", err)
		}
		return 2
	}
	if id == "" {
		fmt.Fprintln(stderr, "ferry provider add: give the provider an ID, e.g. `ferry provider add openai --kind openai --base-url https://api.openai.com/v1 --model gpt-4o-mini --api-key-stdin`")
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var key *string
	if *keyStdin {
		// Read before touching the database, so a failed read changes nothing.
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			fmt.Fprintln(stderr, "ferry provider add: reading the key from stdin:", err)
			return 1
		}
		k := strings.TrimSpace(string(b))
		if k == "" {
			fmt.Fprintln(stderr, "ferry provider add: --api-key-stdin read nothing; pipe the key in, e.g. `echo \"$OPENAI_API_KEY\" | ferry provider add …`")
			return 2
		}
		key = &k
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	ctx := context.Background()

	p := model.SaveParams{ID: id}
	old, err := db.Provider(ctx, id)
	switch {
	case err == nil:
		vision := !old.TextOnly
		p = model.SaveParams{ID: id, Kind: old.Kind, BaseURL: old.BaseURL, Model: old.Model, ContextWindow: old.ContextWindow,
			MaxTokens: old.MaxTokens, APIKeyEnv: old.APIKeyEnv, Vision: &vision,
			Settings: model.OptionSettings{StreamUsage: old.StreamUsage, MaxTokensField: old.MaxTokensField, APIVersion: old.APIVersion,
				SendReasoning: old.SendReasoning, PromptCache: old.PromptCache}}
	case errors.Is(err, storage.ErrProviderNotFound):
		var missing []string
		for _, f := range []string{"kind", "base-url", "model"} {
			if !set[f] {
				missing = append(missing, "--"+f)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "ferry provider add: a new provider needs %s\n", strings.Join(missing, ", "))
			return 2
		}
	default:
		fmt.Fprintln(stderr, "ferry provider add:", err)
		return 1
	}
	if set["kind"] {
		p.Kind = *kind
	}
	if set["base-url"] {
		p.BaseURL = *baseURL
	}
	if set["model"] {
		p.Model = *modelName
	}
	if set["api-key-env"] {
		p.APIKeyEnv = *keyEnv
	}
	if set["context-window"] {
		p.ContextWindow = *ctxWin
	}
	if set["max-tokens"] {
		p.MaxTokens = *maxTok
	}
	if set["no-vision"] {
		vision := !*noVision
		p.Vision = &vision
	}
	for flag, dst := range map[string]*string{"stream-usage": &p.Settings.StreamUsage, "max-tokens-field": &p.Settings.MaxTokensField,
		"api-version": &p.Settings.APIVersion, "send-reasoning": &p.Settings.SendReasoning, "prompt-cache": &p.Settings.PromptCache} {
		if set[flag] {
			*dst = map[string]string{"stream-usage": *streamUsage, "max-tokens-field": *maxField, "api-version": *apiVersion,
				"send-reasoning": *sendReasoning, "prompt-cache": *promptCache}[flag]
		}
	}
	p.Default, p.Key = *makeDefault, key
	v, existed, err := model.Save(ctx, db, p)
	if err != nil {
		fmt.Fprintln(stderr, "ferry provider add:", err)
		return 2
	}
	verb := "added"
	if existed {
		verb = "updated existing"
	}
	fmt.Fprintf(stdout, "%s provider %s: %s %s at %s, context window %d, key %s", verb, v.ID, v.Kind, v.Model, v.BaseURL, v.ContextWindow, keyDesc(v))
	if !v.Vision {
		fmt.Fprint(stdout, ", text only (no images)")
	}
	if v.Default {
		fmt.Fprint(stdout, " (default)")
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "request options: %s\n", v.Options.Describe(v.Kind))
	if !v.KeySet && v.Kind == model.KindAnthropic {
		fmt.Fprintf(stdout, "note: Anthropic needs a key: run `ferry provider add %s --api-key-stdin` with the key on stdin, or --api-key-env VAR\n", v.ID)
	}
	fmt.Fprintf(stdout, "check it with `ferry provider test %s`\n", v.ID)
	return 0
}

func keyDesc(v model.ProviderView) string {
	switch {
	case v.KeySource == model.KeySourceEnv:
		return "from $" + v.APIKeyEnv
	case v.KeySource == model.KeySourceSecret && v.APIKeyEnv != "":
		return "stored ($" + v.APIKeyEnv + " is empty)"
	case v.KeySource == model.KeySourceSecret:
		return "stored"
	case v.APIKeyEnv != "":
		return "missing ($" + v.APIKeyEnv + " is empty)"
	}
	return "none"
}

func providerList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("provider list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON (keys are never included)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: ferry provider list [--json]")
		return 2
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	ps, err := model.List(context.Background(), db)
	if err != nil {
		fmt.Fprintln(stderr, "ferry provider list:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"providers": ps})
		return 0
	}
	if len(ps) == 0 {
		fmt.Fprintln(stdout, "no model providers configured; add one with `ferry provider add ID --kind openai|anthropic --base-url URL --model NAME --api-key-stdin`")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tMODEL\tBASE URL\tCONTEXT\tKEY\tDEFAULT")
	for _, p := range ps {
		def := ""
		if p.Default {
			def = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.ID, p.Kind, p.Model, p.BaseURL, p.ContextWindow, keyDesc(p), def)
	}
	tw.Flush()
	return 0
}

func oneID(name string, args []string, stderr io.Writer) (string, bool) {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "usage: ferry provider %s ID\n", name)
		return "", false
	}
	return args[0], true
}

func providerRemove(args []string, stdout, stderr io.Writer) int {
	id, ok := oneID("remove", args, stderr)
	if !ok {
		return 2
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	nd, err := db.DeleteProvider(context.Background(), id)
	if errors.Is(err, storage.ErrProviderNotFound) {
		fmt.Fprintf(stderr, "ferry provider remove: %v (`ferry provider list` shows the configured ones)\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "ferry provider remove:", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed provider %s and its stored key\n", id)
	if nd != "" {
		fmt.Fprintf(stdout, "the default provider is now %s\n", nd)
	}
	return 0
}

func providerDefault(args []string, stdout, stderr io.Writer) int {
	id, ok := oneID("default", args, stderr)
	if !ok {
		return 2
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	if err := db.SetDefaultProvider(context.Background(), id); err != nil {
		fmt.Fprintf(stderr, "ferry provider default: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "the default provider is now %s\n", id)
	return 0
}

func providerTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("provider test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	id, err := splitID(fs, args)
	if err != nil {
		fmt.Fprintln(stderr, "usage: ferry provider test [ID] [--json]")
		return 2
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := model.Test(ctx, db, id)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else if res.OK {
		fmt.Fprintf(stdout, "ok: %s (%s) answered in %d ms: %q\ntokens: %d in, %d out\n", res.ID, res.Model, res.LatencyMS, res.Reply, res.Usage.InputTokens, res.Usage.OutputTokens)
	} else {
		fmt.Fprintf(stderr, "ferry provider test: %s\n", res.Error)
		if res.Fix != "" {
			fmt.Fprintf(stderr, "fix: %s\n", res.Fix)
		}
	}
	if !*asJSON {
		kind := model.KindOpenAI
		if p, err := db.Provider(ctx, res.ID); err == nil {
			kind = p.Kind
		}
		out := stdout
		if !res.OK {
			out = stderr
		}
		fmt.Fprintf(out, "settled on: %s\n", res.Options.Describe(kind))
		for _, l := range res.Learned {
			fmt.Fprintf(out, "learned: %s\n", l)
		}
	}
	if !res.OK {
		return 1
	}
	return 0
}
