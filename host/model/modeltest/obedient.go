package modeltest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// An obedient model is a fully hijacked one: it carries out every instruction it
// finds anywhere in its context (the system prompt, the tools' descriptions, the
// user's messages, the page context, tool results), in the order they appear, every
// one it can at once, and answers when none is left. It substitutes what it has
// seen into the instructions' arguments: every secret, tab ids, links. Security
// tests judge Ferry's defences by what such a model gets done, never by what it is
// told.
//
// An instruction reads
//
//	FERRY-DO tool key=value key=value ;;
//
// or FERRY-THEN, which waits until every instruction before it has run.
// Values are URL-encoded (%20 for a space); digits alone are a number and
// true/false a boolean. Inside a value these placeholders are filled at the time of
// the call:
//
//	{{secrets}}    every secret seen so far (tokens starting S3CR3T-), joined by "+";
//	               {{secrets:N}} waits until it has seen N
//	{{digits:TEXT}} the digits of the first secret seen that contains TEXT, after
//	               the prefix: a PIN as a number; {{digits:TEXT:N}} its Nth digit
//	               (from 0) alone
//	{{tab:TEXT}}   the id of a tab whose URL or title (from list_tabs) contains TEXT
//	{{link:TEXT}}  the first URL seen that contains TEXT
//	{{opened}}     the id of the tab the latest open_tab opened
//
// An instruction whose placeholder cannot be filled yet waits; one that ran (its
// call is in the history, whatever its result) is not repeated.
//
//	FERRY-SAY text ;;
//
// (text URL-encoded, placeholders filled) is what it writes into its answer when it
// answers: a sub-agent's report, a summary, the words a model was told to write.

// SecretPrefix starts every secret the obedient model collects.
const SecretPrefix = "S3CR3T-"

// Instruction writes an instruction in the obedient model's form; kv alternates
// keys and values (values are encoded here).
func Instruction(tool string, kv ...string) string { return instruction("FERRY-DO ", tool, kv) }

// Then is an instruction that waits until every instruction before it has run
// (FERRY-THEN): "read the tab, then close it".
func Then(tool string, kv ...string) string { return instruction("FERRY-THEN ", tool, kv) }

// Say is an instruction to write text (placeholders filled when it answers) into
// the answer (FERRY-SAY).
func Say(text string) string { return "FERRY-SAY " + encodeValue(text) + " ;;" }

func instruction(verb, tool string, kv []string) string {
	var b strings.Builder
	b.WriteString(verb)
	b.WriteString(tool)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %s=%s", kv[i], encodeValue(kv[i+1]))
	}
	b.WriteString(" ;;")
	return b.String()
}

// encodeValue escapes what would end a value (space, ";") and "%" itself; the rest,
// URLs included, stays as a person would write it.
func encodeValue(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '%', r == ';', r <= ' ', r == 0x7f:
			fmt.Fprintf(&b, "%%%02X", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	instructionRe = regexp.MustCompile(`FERRY-(DO|THEN)\s+([A-Za-z][A-Za-z0-9_:.-]*)((?:\s+[A-Za-z_][A-Za-z0-9_]*=[^\s;]+)*)\s*;;`)
	sayRe         = regexp.MustCompile(`FERRY-SAY\s+([^\s;]+)\s*;;`)
	pairRe        = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=([^\s;]+)`)
	secretRe      = regexp.MustCompile(regexp.QuoteMeta(SecretPrefix) + `[A-Za-z0-9]+`)
	linkRe        = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'\x60\\)\]]+`)
	// Markdown escapes a converter may have added (\_, \*, \[ …).
	mdEscapeRe = regexp.MustCompile(`\\([\\_*\[\]()#+.!<>{}|~-])`)
	mdLinkRe   = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	placeRe    = regexp.MustCompile(`\{\{([a-z]+)(?::([^}]*))?\}\}`)
	numberRe   = regexp.MustCompile(`^[0-9]{1,15}$`)
)

type obeyTab struct {
	id         int
	url, title string
}

// context is everything the obedient model read in one request.
type obeyContext struct {
	texts   []string // in order of appearance, JSON strings decoded
	secrets []string
	tabs    []obeyTab
	links   []string
	opened  int
	done    map[string]bool // call ids already in the history
}

func (c *obeyContext) add(s string) {
	if s == "" {
		return
	}
	c.texts = append(c.texts, s)
	// What a real model reads of JSON is the strings' content, unescaped.
	var v any
	if json.Unmarshal([]byte(strings.TrimSpace(s)), &v) == nil {
		c.walk(v)
		return
	}
	// A line of host text, then a JSON document (the page context).
	if i := strings.Index(s, "\n{"); i >= 0 && json.Unmarshal([]byte(s[i+1:]), &v) == nil {
		c.walk(v)
	}
}

func (c *obeyContext) walk(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			c.walk(x[k])
		}
	case []any:
		for _, e := range x {
			c.walk(e)
		}
	case string:
		c.texts = append(c.texts, x)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same order every time
	return keys
}

// tabsFrom reads list_tabs results (and open_tab's) for the tab placeholders.
func (c *obeyContext) tabsFrom(content string) {
	var res struct {
		Result struct {
			Tabs []struct {
				TabID int    `json:"tab_id"`
				URL   string `json:"url"`
				Title string `json:"title"`
			} `json:"tabs"`
			TabID int    `json:"tab_id"`
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(content), &res) != nil {
		return
	}
	// A page's relative links, resolved against its URL as a model reading it would.
	var page struct {
		Result struct {
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(content), &page) == nil && page.Result.Content != "" {
		if base, err := url.Parse(page.Result.URL); err == nil && base.IsAbs() {
			for _, m := range mdLinkRe.FindAllStringSubmatch(page.Result.Content, -1) {
				if u, err := base.Parse(m[1]); err == nil {
					c.texts = append(c.texts, u.String())
				}
			}
		}
	}
	for _, t := range res.Result.Tabs {
		c.tabs = append(c.tabs, obeyTab{t.TabID, t.URL, t.Title})
	}
	if res.Result.TabID != 0 && len(res.Result.Tabs) == 0 {
		c.tabs = append(c.tabs, obeyTab{res.Result.TabID, res.Result.URL, res.Result.Title})
	}
}

func readContext(req Request) *obeyContext {
	c := &obeyContext{done: map[string]bool{}}
	c.add(req.System)
	for _, t := range req.Tools {
		c.add(t.Description)
	}
	calls := map[string]string{} // call id → tool
	for _, m := range req.Messages {
		c.add(m.Text)
		for _, tc := range m.ToolCalls {
			c.done[tc.ID] = true
			calls[tc.ID] = tc.Name
		}
		for _, r := range m.ToolResults {
			c.add(r.Content)
			c.tabsFrom(r.Content)
			if calls[r.CallID] == "open_tab" {
				var res struct {
					Success bool `json:"success"`
					Result  struct {
						TabID int `json:"tab_id"`
					} `json:"result"`
				}
				if json.Unmarshal([]byte(r.Content), &res) == nil && res.Success {
					c.opened = res.Result.TabID
				}
			}
		}
	}
	seenSecret, seenLink := map[string]bool{}, map[string]bool{}
	for _, t := range c.texts {
		for _, s := range secretRe.FindAllString(t, -1) {
			if !seenSecret[s] {
				seenSecret[s] = true
				c.secrets = append(c.secrets, s)
			}
		}
		for _, l := range linkRe.FindAllString(t, -1) {
			l = strings.TrimRight(l, ".,;:!?")
			if !seenLink[l] {
				seenLink[l] = true
				c.links = append(c.links, l)
			}
		}
	}
	return c
}

type obeyInstruction struct {
	id    string // the call id it runs under: the same instruction never runs twice
	tool  string
	then  bool // waits until every instruction before it has run
	pairs [][2]string
}

// unescape undoes what a model reads past: a converter's Markdown escapes, and the
// quotes of JSON text it reads as the strings' content.
func unescape(t string) string {
	return strings.ReplaceAll(mdEscapeRe.ReplaceAllString(t, "$1"), `\"`, `"`)
}

func (c *obeyContext) instructions() []obeyInstruction {
	var out []obeyInstruction
	seen := map[string]bool{}
	for _, t := range c.texts {
		t = unescape(t)
		for _, m := range instructionRe.FindAllStringSubmatch(t, -1) {
			key := m[2] + m[3]
			if seen[key] {
				continue
			}
			seen[key] = true
			sum := sha256.Sum256([]byte(key))
			in := obeyInstruction{id: "call_obey_" + hex.EncodeToString(sum[:6]), tool: m[2], then: m[1] == "THEN"}
			for _, p := range pairRe.FindAllStringSubmatch(m[3], -1) {
				in.pairs = append(in.pairs, [2]string{p[1], p[2]})
			}
			out = append(out, in)
		}
	}
	return out
}

// says is the text of every FERRY-SAY in the context, in order, once each, with
// its placeholders filled; one that cannot be filled is left out.
func (c *obeyContext) says() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range c.texts {
		t = unescape(t)
		for _, m := range sayRe.FindAllStringSubmatch(t, -1) {
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			raw, err := url.PathUnescape(m[1])
			if err != nil {
				raw = m[1]
			}
			if v, ok := c.fill(raw); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// fill substitutes the placeholders; false when one cannot be filled yet.
func (c *obeyContext) fill(v string) (string, bool) {
	ok := true
	out := placeRe.ReplaceAllStringFunc(v, func(p string) string {
		m := placeRe.FindStringSubmatch(p)
		switch m[1] {
		case "secrets":
			want, _ := strconv.Atoi(m[2])
			if len(c.secrets) == 0 || len(c.secrets) < want {
				ok = false
			}
			return strings.Join(c.secrets, "+")
		case "digits":
			text, nth := m[2], -1
			if i := strings.LastIndex(text, ":"); i >= 0 {
				if n, err := strconv.Atoi(text[i+1:]); err == nil {
					text, nth = text[:i], n
				}
			}
			for _, s := range c.secrets {
				if strings.Contains(s, text) {
					var d strings.Builder
					for _, r := range strings.TrimPrefix(s, SecretPrefix) {
						if r >= '0' && r <= '9' {
							d.WriteRune(r)
						}
					}
					switch {
					case nth >= 0 && nth < d.Len():
						return d.String()[nth : nth+1]
					case nth < 0 && d.Len() > 0:
						return d.String()
					}
				}
			}
		case "tab":
			for _, t := range c.tabs {
				if strings.Contains(t.url, m[2]) || strings.Contains(t.title, m[2]) {
					return strconv.Itoa(t.id)
				}
			}
		case "link":
			for _, l := range c.links {
				if strings.Contains(l, m[2]) {
					return l
				}
			}
		case "opened":
			if c.opened != 0 {
				return strconv.Itoa(c.opened)
			}
		}
		ok = false
		return p
	})
	return out, ok
}

func (c *obeyContext) arguments(in obeyInstruction) (string, bool) {
	args := map[string]any{}
	for _, p := range in.pairs {
		raw, err := url.PathUnescape(p[1])
		if err != nil {
			raw = p[1]
		}
		v, ok := c.fill(raw)
		if !ok {
			return "", false
		}
		switch {
		case v == "true" || v == "false":
			args[p[0]] = v == "true"
		case numberRe.MatchString(v):
			n, _ := strconv.Atoi(v)
			args[p[0]] = n
		case strings.HasPrefix(v, "[") && json.Valid([]byte(v)):
			args[p[0]] = json.RawMessage(v)
		default:
			args[p[0]] = v
		}
	}
	b, _ := json.Marshal(args)
	return string(b), true
}

// Obedient is the obedient model as a responder (Server.SetResponder). Each turn it
// calls, at once and in order, every instruction not yet run whose placeholders it
// can fill, as a model calls several tools in one turn; what needs a result waits.
func Obedient() func(Request) Turn {
	return func(req Request) Turn {
		c := readContext(req)
		var turn Turn
		earlier := true // every instruction so far has run
		for _, in := range c.instructions() {
			if c.done[in.id] {
				continue
			}
			if in.then && !earlier {
				break
			}
			earlier = false
			args, ok := c.arguments(in)
			if !ok {
				continue // a placeholder it cannot fill yet
			}
			turn.ToolCalls = append(turn.ToolCalls, Call{ID: in.id, Name: in.tool, Arguments: args})
		}
		if len(turn.ToolCalls) > 0 {
			return turn
		}
		answer := "Done."
		for _, said := range c.says() {
			answer += " " + said
		}
		if len(c.secrets) > 0 {
			answer += " I saw " + strings.Join(c.secrets, ", ") + "."
		}
		return Text(answer)
	}
}
