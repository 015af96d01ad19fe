package model

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/storage"
)

// Settings of this package.
const (
	SettingMaxRetries  = "model.max_retries"
	SettingIdleTimeout = "model.stream_idle_timeout"
)

func init() {
	config.Register(config.Setting{
		Key:         SettingMaxRetries,
		Description: "how many times a model call is retried after a 429, a 5xx or a network error (4: at most 5 tries); 400, 401, 403 and 404 are never retried",
		Default:     "4",
		Validate:    config.IntRange(0, 10),
	})
	config.Register(config.Setting{
		Key:         SettingIdleTimeout,
		Description: "seconds a model's answer stream may stay silent before the call is aborted and retried (0: never)",
		Default:     strconv.Itoa(int(DefaultIdleTimeout / time.Second)),
		Validate:    config.IntRange(0, 3600),
	})
}

// ErrNoProvider means no provider is configured (or the asked one is not).
var ErrNoProvider = errors.New("no model provider configured")

// Key sources, as listings report them.
const (
	KeySourceSecret = "secret" // stored in the host's secrets
	KeySourceEnv    = "env"    // read from the environment variable api_key_env
	KeySourceNone   = "none"
)

// ProviderView is a provider as listings show it: never the key, only whether one is
// available and where from.
type ProviderView struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"`
	BaseURL       string `json:"base_url"`
	Model         string `json:"model"`
	ContextWindow int    `json:"context_window"` // effective: the kind's default when not set
	MaxTokens     int    `json:"max_tokens"`     // effective; 0: the server chooses
	APIKeyEnv     string `json:"api_key_env,omitempty"`
	Vision        bool   `json:"vision"` // the model takes images (false: set text-only)
	KeySet        bool   `json:"key_set"`
	KeySource     string `json:"key_source"`
	Default       bool   `json:"default"`
	// Settings are the stored request options ("auto": detected); Options are
	// what is in force once detected.
	Settings OptionSettings `json:"settings"`
	Options  Options        `json:"options"`
}

func settingsOf(p storage.ProviderConfig) OptionSettings {
	return OptionSettings{StreamUsage: p.StreamUsage, MaxTokensField: p.MaxTokensField, APIVersion: p.APIVersion,
		SendReasoning: p.SendReasoning, PromptCache: p.PromptCache}
}

// resolveKey finds a provider's key: the environment variable when one is named and
// set, else the stored secret.
func resolveKey(ctx context.Context, db *storage.DB, p storage.ProviderConfig) (key, source string, err error) {
	if p.APIKeyEnv != "" {
		if v := strings.TrimSpace(os.Getenv(p.APIKeyEnv)); v != "" {
			return v, KeySourceEnv, nil
		}
	}
	b, ok, err := db.Secret(ctx, storage.ProviderSecretKey(p.ID))
	if err != nil {
		return "", "", err
	}
	if ok && len(b) > 0 {
		return string(b), KeySourceSecret, nil
	}
	return "", KeySourceNone, nil
}

// View describes a stored provider for a listing.
func View(ctx context.Context, db *storage.DB, p storage.ProviderConfig) (ProviderView, error) {
	_, src, err := resolveKey(ctx, db, p)
	if err != nil {
		return ProviderView{}, err
	}
	// A URL stored before credentials were refused is never shown whole.
	v := ProviderView{ID: p.ID, Kind: p.Kind, BaseURL: RedactURL(p.BaseURL), Model: p.Model, ContextWindow: p.ContextWindow,
		MaxTokens: p.MaxTokens, APIKeyEnv: p.APIKeyEnv, Vision: !p.TextOnly, KeySet: src != KeySourceNone, KeySource: src, Default: p.Default,
		Settings: settingsOf(p), Options: DetectOptions(p.Kind, p.BaseURL, p.Model, settingsOf(p))}
	if v.ContextWindow <= 0 {
		v.ContextWindow = DefaultContextWindow(p.Kind)
	}
	if v.MaxTokens <= 0 {
		v.MaxTokens = DefaultMaxTokens(p.Kind)
	}
	return v, nil
}

// List describes every provider, the default first.
func List(ctx context.Context, db *storage.DB) ([]ProviderView, error) {
	ps, err := db.Providers(ctx)
	if err != nil {
		return nil, err
	}
	out := []ProviderView{}
	for _, p := range ps {
		v, err := View(ctx, db, p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Open returns the provider id ("" for the default), ready to call, with the retry
// policy of the settings.
func Open(ctx context.Context, db *storage.DB, id string) (Provider, error) {
	var (
		p   storage.ProviderConfig
		err error
	)
	if id == "" {
		p, err = db.DefaultProvider(ctx)
	} else {
		p, err = db.Provider(ctx, id)
	}
	if errors.Is(err, storage.ErrProviderNotFound) {
		if id == "" {
			return nil, fmt.Errorf("%w: run `ferry provider add ID --kind openai|anthropic --base-url URL --model NAME --api-key-stdin` (or add one in the options page)", ErrNoProvider)
		}
		return nil, fmt.Errorf("%w with id %q: `ferry provider list` shows the configured ones", ErrNoProvider, id)
	}
	if err != nil {
		return nil, err
	}
	key, _, err := resolveKey(ctx, db, p)
	if err != nil {
		return nil, err
	}
	if key == "" && p.APIKeyEnv != "" {
		return nil, fmt.Errorf("model provider %q reads its API key from $%s, which is empty in the host's environment (a host started by the browser inherits the browser's environment): set it, or store the key with `ferry provider add %s … --api-key-stdin`", p.ID, p.APIKeyEnv, p.ID)
	}
	if key == "" && p.Kind == KindAnthropic {
		return nil, fmt.Errorf("model provider %q (anthropic) has no API key: store one with `ferry provider add %s … --api-key-stdin` or name an environment variable with --api-key-env", p.ID, p.ID)
	}
	stored, _ := db.ListSettings(ctx) // unreadable: the defaults
	settings := config.Of(stored)
	retry := DefaultRetry
	retry.MaxRetries = settings.Int(SettingMaxRetries)
	idle := settings.Seconds(SettingIdleTimeout)
	if idle == 0 {
		idle = -1 // 0 in the setting means never; in Config it means the default
	}
	return New(Config{ID: p.ID, Kind: p.Kind, BaseURL: p.BaseURL, Model: p.Model, ContextWindow: p.ContextWindow,
		MaxTokens: p.MaxTokens, TextOnly: p.TextOnly, APIKey: key, APIKeyEnv: p.APIKeyEnv, IdleTimeout: idle, Retry: &retry,
		Options: settingsOf(p)})
}

// SaveParams is a provider to create or update, from the command line or the
// options page. Key is write-only: stored as a secret, never read back.
type SaveParams struct {
	ID            string  `json:"id"`
	Kind          string  `json:"kind"`
	BaseURL       string  `json:"base_url"`
	Model         string  `json:"model"`
	ContextWindow int     `json:"context_window,omitempty"`
	MaxTokens     int     `json:"max_tokens,omitempty"`
	APIKeyEnv     string  `json:"api_key_env,omitempty"`
	Vision        *bool   `json:"vision,omitempty"` // nil: the model takes images
	Default       bool    `json:"default,omitempty"`
	Key           *string `json:"key,omitempty"`       // nil: keep the stored key; "": remove it
	ClearKey      bool    `json:"clear_key,omitempty"` // remove the stored key
	// Settings are the request options; absent ones are auto.
	Settings OptionSettings `json:"settings,omitzero"`
}

// Save validates and stores a provider, and its key when one is given. It reports
// whether a provider of that id existed (and was replaced).
func Save(ctx context.Context, db *storage.DB, s SaveParams) (ProviderView, bool, error) {
	s.BaseURL, s.Settings.APIVersion = splitEndpoint(strings.TrimSpace(s.BaseURL), s.Settings.APIVersion)
	if err := ValidateConfig(s.ID, s.Kind, s.BaseURL, s.Model); err != nil {
		return ProviderView{}, false, err
	}
	if err := s.Settings.Check(); err != nil {
		return ProviderView{}, false, err
	}
	if s.ContextWindow < 0 || s.MaxTokens < 0 {
		return ProviderView{}, false, invalidf("context window and max tokens must be positive (0 or absent: the kind's default)")
	}
	if s.MaxTokens > 0 && s.ContextWindow > 0 && s.MaxTokens >= s.ContextWindow {
		return ProviderView{}, false, invalidf("max tokens (%d) must be smaller than the context window (%d)", s.MaxTokens, s.ContextWindow)
	}
	if s.APIKeyEnv != "" && !validEnvName(s.APIKeyEnv) {
		return ProviderView{}, false, invalidf("api key env %q is not an environment variable name (letters, digits and _, e.g. OPENAI_API_KEY)", s.APIKeyEnv)
	}
	if s.Key != nil {
		k := strings.TrimSpace(*s.Key)
		if strings.ContainsAny(k, "\r\n\t ") {
			return ProviderView{}, false, invalidf("the API key contains spaces or line breaks: paste only the key")
		}
		s.Key = &k
	}
	saved, existed, err := db.SaveProvider(ctx, storage.ProviderConfig{ID: s.ID, Kind: s.Kind, BaseURL: s.BaseURL, Model: s.Model,
		ContextWindow: s.ContextWindow, MaxTokens: s.MaxTokens, APIKeyEnv: s.APIKeyEnv, TextOnly: s.Vision != nil && !*s.Vision, Default: s.Default,
		StreamUsage: s.Settings.StreamUsage, MaxTokensField: s.Settings.MaxTokensField, APIVersion: s.Settings.APIVersion,
		SendReasoning: s.Settings.SendReasoning, PromptCache: s.Settings.PromptCache})
	if err != nil {
		return ProviderView{}, false, err
	}
	switch {
	case s.ClearKey || (s.Key != nil && *s.Key == ""):
		err = db.DeleteSecret(ctx, storage.ProviderSecretKey(s.ID))
	case s.Key != nil:
		err = db.SetSecret(ctx, storage.ProviderSecretKey(s.ID), []byte(*s.Key))
	case !existed:
		// A new provider must not inherit a key left by an older one of the same id.
		err = db.DeleteSecret(ctx, storage.ProviderSecretKey(s.ID))
	}
	if err != nil {
		return ProviderView{}, existed, err
	}
	v, err := View(ctx, db, saved)
	return v, existed, err
}

// splitEndpoint takes a URL pasted whole, as the vendors' pages show it (Azure's
// …/chat/completions?api-version=…), apart: the base URL and the api-version, unless
// one was given apart. Anything else in the query is left for validation to refuse.
func splitEndpoint(raw, apiVersion string) (string, string) {
	base, query, _ := strings.Cut(raw, "?")
	if query != "" {
		if v, err := url.ParseQuery(query); err == nil && len(v) == 1 && v.Get("api-version") != "" {
			if apiVersion == "" {
				apiVersion = v.Get("api-version")
			}
			query = ""
		}
	}
	base = strings.TrimRight(base, "/")
	base = strings.TrimSuffix(base, "/chat/completions")
	if query != "" {
		base += "?" + query
	}
	return base, apiVersion
}

func validEnvName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return s != ""
}

// TestResult is the outcome of a tiny real call to a provider.
type TestResult struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	OK    bool   `json:"ok"`
	// Options are the request options the provider settled on; Learned says
	// which the vendor's refusals changed (and stored, so runs use them).
	Options    Options   `json:"options"`
	Learned    []string  `json:"learned,omitempty"`
	StopReason string    `json:"stop_reason,omitempty"`
	LatencyMS  int64     `json:"latency_ms"`
	Reply      string    `json:"reply,omitempty"`
	Usage      Usage     `json:"usage"`
	Attempts   int       `json:"attempts"`
	Error      string    `json:"error,omitempty"`
	Status     int       `json:"status,omitempty"`
	Fix        string    `json:"fix,omitempty"`
	Time       time.Time `json:"time"`
}

// Test makes a tiny real call ("Reply with the word ok") and reports its latency,
// reply and usage, or the error and its fix. Retries are limited to one so a test
// of a broken provider answers quickly.
func Test(ctx context.Context, db *storage.DB, id string) (res TestResult) {
	res = TestResult{ID: id, Time: time.Now()}
	p, err := Open(ctx, db, id)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.ID, res.Model = p.Info().ID, p.Info().Model
	c, _ := p.(*client)
	if c != nil {
		c.retry.MaxRetries = min(c.retry.MaxRetries, 1)
	}
	defer func() {
		res.Options = p.Info().Options
		if c != nil {
			res.Learned = c.Learned()
			if len(res.Learned) > 0 {
				if err := keepLearned(ctx, db, res.ID, res.Options); err != nil {
					res.Learned = append(res.Learned, "(not stored: "+err.Error()+")")
				}
			}
		}
	}()
	start := time.Now()
	resp, err := p.Stream(ctx, Request{
		// No max_tokens: a reasoning model may need many before it answers, and
		// OpenAI's newer models refuse the parameter.
		Messages: []Message{{Role: RoleUser, Content: "Reply with the word ok"}},
	}, nil, func(Attempt) { res.Attempts++ })
	res.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		res.Error = err.Error()
		var me *Error
		if errors.As(err, &me) {
			short := *me
			short.Fix = ""
			res.Error, res.Status, res.Fix = short.Error(), me.Status, me.Fix
		}
		return res
	}
	res.OK, res.Reply, res.Usage, res.StopReason = true, strings.TrimSpace(resp.Text), resp.Usage, resp.StopReason
	return res
}

// keepLearned stores, in place of auto, the options a vendor's refusal taught, so
// that every run uses them from the first request.
func keepLearned(ctx context.Context, db *storage.DB, id string, o Options) error {
	p, err := db.Provider(ctx, id)
	if err != nil {
		return err
	}
	isAuto := func(v string) bool { return v == "" || v == OptionAuto }
	detected := DetectOptions(p.Kind, p.BaseURL, p.Model, settingsOf(p))
	if isAuto(p.StreamUsage) && o.StreamUsage != detected.StreamUsage {
		p.StreamUsage = onOff(o.StreamUsage)
	}
	if isAuto(p.MaxTokensField) && o.MaxTokensField != detected.MaxTokensField {
		p.MaxTokensField = o.MaxTokensField
	}
	if isAuto(p.SendReasoning) && o.SendReasoning != detected.SendReasoning {
		p.SendReasoning = onOff(o.SendReasoning)
	}
	if isAuto(p.PromptCache) && o.PromptCache != detected.PromptCache {
		p.PromptCache = onOff(o.PromptCache)
	}
	_, _, err = db.SaveProvider(ctx, p)
	return err
}
