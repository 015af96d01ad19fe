package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
	"golang.org/x/tools/txtar"
)

// replayDir holds the replay corpus: one txtar file per case, each a recorded (or
// recorded-shape) vendor exchange; its README says where each came from.
const replayDir = "../../host/model/testdata/replay"

// replayCase is a case's case.json.
type replayCase struct {
	Vendor string `json:"vendor"`
	Kind   string `json:"kind"`
	Model  string `json:"model"`
	// Path is added to the loopback server's URL to make the base URL (OpenAI
	// kind: "/v1" when absent).
	Path     string            `json:"path"`
	Flags    []string          `json:"flags"`    // more `ferry provider add` flags
	Settings map[string]string `json:"settings"` // `ferry config set` before the run
	Prompt   string            `json:"prompt"`
	// Refuse names, for a request-check rule, the section to answer with when a
	// request breaks it (the vendor's recorded refusal); a refused request takes
	// no response.
	Refuse map[string]string `json:"refuse"`
	Expect struct {
		Status        string         `json:"status"` // completed, failed
		Text          *string        `json:"text"`
		TextContains  []string       `json:"text_contains"`
		ErrorContains []string       `json:"error_contains"`
		StopReason    string         `json:"stop_reason"`
		Tools         []string       `json:"tools"` // name:code of every tool call, in order ("ok" for success)
		Usage         map[string]int `json:"usage"` // fields of the final event's usage
		Requests      int            `json:"requests"`
		// RequestContains / RequestLacks: strings the body of request N (1-based)
		// must hold, or must not.
		RequestContains map[string][]string `json:"request_contains"`
		RequestLacks    map[string][]string `json:"request_lacks"`
		Events          []string            `json:"events"` // event types that must appear
	} `json:"expect"`
}

// refusalRules are the request checks a case can name: each is what a vendor
// verifiably refuses.
var refusalRules = map[string]func(r *http.Request, body []byte) bool{
	"stream_options": func(_ *http.Request, b []byte) bool { return topLevel(b, "stream_options") },
	"max_tokens":     func(_ *http.Request, b []byte) bool { return topLevel(b, "max_tokens") },
	"max_completion_tokens": func(_ *http.Request, b []byte) bool {
		return topLevel(b, "max_completion_tokens")
	},
	"no_reasoning_content": func(_ *http.Request, b []byte) bool { return modeltest.LacksReasoning(b) },
	"no_api_version":       func(r *http.Request, _ []byte) bool { return r.URL.Query().Get("api-version") == "" },
	"no_api_key_header":    func(r *http.Request, _ []byte) bool { return r.Header.Get("api-key") == "" },
	"duplicate_tool_use_id": func(_ *http.Request, b []byte) bool {
		seen := map[string]bool{}
		for _, m := range regexp.MustCompile(`"type":"tool_use","id":"([^"]+)"`).FindAllSubmatch(b, -1) {
			if seen[string(m[1])] {
				return true
			}
			seen[string(m[1])] = true
		}
		return false
	},
}

func topLevel(body []byte, key string) bool {
	var m map[string]json.RawMessage
	json.Unmarshal(body, &m)
	_, ok := m[key]
	return ok
}

// replayServer serves a case's responses in order, byte for byte.
type replayServer struct {
	t        *testing.T
	c        replayCase
	sections map[string][]byte
	mu       sync.Mutex
	served   int
	bodies   [][]byte
}

func (s *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	section := ""
	names := make([]string, 0, len(s.c.Refuse))
	for rule := range s.c.Refuse {
		names = append(names, rule)
	}
	sort.Strings(names)
	for _, rule := range names {
		if check, ok := refusalRules[rule]; !ok {
			s.t.Errorf("unknown refusal rule %q", rule)
		} else if check(r, body) {
			section = s.c.Refuse[rule]
			break
		}
	}
	if section == "" {
		s.served++
		section = "response." + strconv.Itoa(s.served)
	}
	raw, ok := s.sections[section]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "replay: the case has no "+section, http.StatusTeapot)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), r)
	if err != nil {
		s.t.Errorf("%s: %v", section, err)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if k != "Content-Length" && k != "Transfer-Encoding" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	// Event by event, flushed, as a vendor streams.
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		w.Write(line)
		if len(bytes.TrimSpace(line)) == 0 {
			w.(http.Flusher).Flush()
		}
		if err != nil {
			break
		}
	}
}

// TestReplayCorpus drives `ferry run` end to end against every recorded exchange
// of the corpus, served from loopback: the right answer, tool calls and usage, or
// an error that says what happened; never "completed" for a stream that failed.
func TestReplayCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(replayDir, "*.txtar"))
	if len(files) < 30 {
		t.Fatalf("the replay corpus has %d cases", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := &replayServer{t: t, sections: map[string][]byte{}}
			for _, f := range ar.Files {
				s.sections[f.Name] = f.Data
			}
			if err := json.Unmarshal(s.sections["case.json"], &s.c); err != nil {
				t.Fatalf("case.json: %v", err)
			}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c := s.c
			base := srv.URL + c.Path
			if c.Path == "" && c.Kind == "openai" {
				base += "/v1"
			}
			home := t.TempDir()
			args := append([]string{"provider", "add", "replay", "--kind", c.Kind, "--base-url", base, "--model", c.Model, "--api-key-stdin", "--default"}, c.Flags...)
			if _, stderr, code := runFerry(t, home, "sk-replay-key\n", args...); code != 0 {
				t.Fatalf("provider add: %s", stderr)
			}
			settings := map[string]string{"model.max_retries": "1"}
			for k, v := range c.Settings {
				settings[k] = v
			}
			for k, v := range settings {
				if _, stderr, code := runFerry(t, home, "", "config", "set", k, v); code != 0 {
					t.Fatalf("config set %s: %s", k, stderr)
				}
			}
			prompt := c.Prompt
			if prompt == "" {
				prompt = "Hello."
			}
			stdout, stderr, code := runFerry(t, home, "", "run", "--local", "--json", prompt)
			var final map[string]any
			var tools, types []string
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				var ev map[string]any
				if json.Unmarshal([]byte(line), &ev) != nil {
					continue
				}
				typ, _ := ev["type"].(string)
				types = append(types, typ)
				switch typ {
				case "tool_call_finished":
					code, _ := ev["code"].(string)
					if code == "" {
						code = "ok"
					}
					tools = append(tools, fmt.Sprintf("%s:%s", ev["name"], code))
				case "run_finished", "run_failed":
					final = ev
				}
			}
			if final == nil {
				t.Fatalf("no final event (exit %d)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			e := c.Expect
			status, _ := final["status"].(string)
			text, _ := final["text"].(string)
			errText, _ := final["error"].(string)
			report := fmt.Sprintf("status %s, exit %d, text %q, error %q, stop %v, tools %v, usage %v, requests %d", status, code, text, errText, final["stop_reason"], tools, final["usage"], len(s.bodies))
			if status != e.Status || (status == "completed") != (code == 0) {
				t.Fatalf("%s; want %s", report, e.Status)
			}
			if e.Text != nil && strings.TrimSpace(text) != *e.Text {
				t.Errorf("text %q, want %q (%s)", text, *e.Text, report)
			}
			for _, w := range e.TextContains {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q (%s)", w, report)
				}
			}
			for _, w := range e.ErrorContains {
				if !strings.Contains(errText, w) {
					t.Errorf("error lacks %q (%s)", w, report)
				}
			}
			if e.StopReason != "" && final["stop_reason"] != e.StopReason {
				t.Errorf("stop reason %v, want %s (%s)", final["stop_reason"], e.StopReason, report)
			}
			if e.Tools != nil && strings.Join(tools, " ") != strings.Join(e.Tools, " ") {
				t.Errorf("tools %v, want %v (%s)", tools, e.Tools, report)
			}
			usage, _ := final["usage"].(map[string]any)
			for k, want := range e.Usage {
				if got, _ := usage[k].(float64); int(got) != want {
					t.Errorf("usage %s = %v, want %d (%s)", k, usage[k], want, report)
				}
			}
			if e.Requests > 0 && len(s.bodies) != e.Requests {
				t.Errorf("%d requests, want %d (%s)", len(s.bodies), e.Requests, report)
			}
			for n, wants := range e.RequestContains {
				i, _ := strconv.Atoi(n)
				for _, w := range wants {
					if i < 1 || i > len(s.bodies) || !bytes.Contains(s.bodies[i-1], []byte(w)) {
						t.Errorf("request %s lacks %q", n, w)
					}
				}
			}
			for n, lacks := range e.RequestLacks {
				i, _ := strconv.Atoi(n)
				for _, w := range lacks {
					if i >= 1 && i <= len(s.bodies) && bytes.Contains(s.bodies[i-1], []byte(w)) {
						t.Errorf("request %s holds %q", n, w)
					}
				}
			}
			for _, w := range e.Events {
				if !strings.Contains(" "+strings.Join(types, " ")+" ", " "+w+" ") {
					t.Errorf("no %s event among %v", w, types)
				}
			}
			if t.Failed() {
				t.Logf("stderr: %s", stderr)
			}
		})
	}
}

// TestReplayREADME holds the corpus's README table to its files: every case is
// listed with its vendor and source, and every listed case exists.
func TestReplayREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(replayDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| [^|]+ \\| [^|]+ \\| [^|]+ \\|$").FindAllSubmatch(readme, -1) {
		listed[string(m[1])] = true
	}
	files, _ := filepath.Glob(filepath.Join(replayDir, "*.txtar"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		if !listed[name] {
			t.Errorf("%s is not in the README's table", name)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("the README lists %s, which has no file", name)
	}
}
