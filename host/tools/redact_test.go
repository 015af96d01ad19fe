package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"password": true, "user_password": true, "apiKey": true, "api_key": true, "APIKey": true,
		"X-Auth-Token": true, "client.secret": true, "privateKey": true, "key": true, "keys": true,
		"passphrase": true, "otp": true, "pin": true, "max_tokens": true, // a number under it is kept (below)
		"text": false, "keyboard": false, "monkey": false, "path": false, "spin": false, "tokenizer": false,
		"content": false, "url": false, "selector": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestAuditKeepsShapes: what the audit row keeps of large, bulk and sensitive
// arguments and results, and what the confirmation card shows of the same call.
func TestAuditKeepsShapes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	long := strings.Repeat("lorem ipsum ", 1000) // 12 KB
	write := Tool{Name: "write_file", Kind: KindWrite, Confirm: true, AuditShape: []string{"content", "body"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"api_key":{"type":"string"},"max_tokens":{"type":"integer"},"note":{"type":"string"}}}`),
		Run: func(ctx context.Context, c *Call) (any, error) {
			return map[string]any{"path": "/a", "body": "FILE-BODY-" + long, "echo": "key was sk-live-123456"}, nil
		}}
	must(t, e.reg.Register(write))
	args, _ := json.Marshal(map[string]any{"path": "/a", "content": "FILE-BODY-" + long, "api_key": "sk-live-123456", "max_tokens": 300, "note": long})
	if res := e.reg.Call(ctx, &Call{Tool: "write_file", Arguments: args}); !res.Success {
		t.Fatalf("call: %+v", res)
	}
	rows := e.rows(storage.AuditFilter{Tool: "write_file"})
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	row := rows[0]
	var got map[string]any
	if err := json.Unmarshal(row.Arguments, &got); err != nil {
		t.Fatal(err)
	}
	body := "FILE-BODY-" + long
	if c, _ := got["content"].(map[string]any); c["bytes"] != float64(len(body)) || c["sha256"] != sha(body) || c["cut"] != nil {
		t.Errorf("bulk argument kept as %v, want only its size and hash", got["content"])
	}
	if got["api_key"] != Redacted || got["max_tokens"] != float64(300) || got["path"] != "/a" {
		t.Errorf("arguments %v: the key is not redacted, or a plain value was lost", got)
	}
	if n, _ := got["note"].(map[string]any); n["bytes"] != float64(len(long)) || n["sha256"] != sha(long) || !strings.HasPrefix(n["cut"].(string), "lorem ipsum") || len(n["cut"].(string)) > auditHead {
		t.Errorf("long argument kept as %v, want its head, size and hash", got["note"])
	}
	for _, leak := range []string{"FILE-BODY", "sk-live-123456"} {
		if strings.Contains(string(row.Arguments), leak) || strings.Contains(row.Result, leak) {
			t.Errorf("%q is in the audit row: %s / %s", leak, row.Arguments, row.Result)
		}
	}
	if !strings.Contains(row.Result, `"echo":"key was [redacted]"`) || !strings.Contains(row.Result, sha(body)) {
		t.Errorf("result summary %s", row.Result)
	}
	// The person asked to confirm saw what would be written, but not the key.
	card := e.ui.confirms[len(e.ui.confirms)-1].Arguments
	if !bytes.Contains(card, []byte("FILE-BODY-lorem")) || bytes.Contains(card, []byte("sk-live")) {
		t.Errorf("confirmation card arguments %.200s", card)
	}

	// Arguments still over MaxAuditArguments once shaped are kept as a whole shape:
	// field names, size and hash.
	many := map[string]any{}
	for i := range 20 {
		many[strings.Repeat("f", 5)+string(rune('a'+i))] = strings.Repeat("x", 900)
	}
	args, _ = json.Marshal(many)
	e.reg.Call(ctx, &Call{Tool: "write_file", Arguments: args})
	rows = e.rows(storage.AuditFilter{Tool: "write_file"})
	var whole map[string]any
	json.Unmarshal(rows[0].Arguments, &whole)
	if fs, _ := whole["fields"].([]any); len(fs) != 20 || whole["sha256"] == nil || whole["bytes"] == nil || len(rows[0].Arguments) > MaxAuditArguments {
		t.Errorf("large arguments kept as %.300s", rows[0].Arguments)
	}

	// Arguments that do not parse keep only their shape: the text was still sent.
	e.reg.Call(ctx, &Call{Tool: "write_file", Arguments: json.RawMessage(`{"api_key": "sk-live-999999", oops`)})
	rows = e.rows(storage.AuditFilter{Tool: "write_file"})
	if strings.Contains(string(rows[0].Arguments), "sk-live-999999") || !strings.Contains(string(rows[0].Arguments), "sha256") {
		t.Errorf("unparsed arguments kept as %s", rows[0].Arguments)
	}
}

// TestSecretDecidedAfterTheRun: a tool that learns only from its result that an
// argument was sensitive (text typed into a password field) keeps it out of the
// row; a failed call keeps it out too, since nobody could tell.
func TestSecretDecidedAfterTheRun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	typing := Tool{Name: "type_text", Kind: KindRead,
		Parameters: json.RawMessage(`{"type":"object","properties":{"field":{"type":"string"},"text":{"type":"string"}}}`),
		Secret: func(c *Call, result any) []string {
			if r, ok := result.(map[string]any); ok && r["sensitive"] == false {
				return nil
			}
			return []string{"text"}
		},
		Run: func(ctx context.Context, c *Call) (any, error) {
			var a map[string]string
			c.Decode(&a)
			switch a["field"] {
			case "password":
				return map[string]any{"sensitive": true, "value": a["text"]}, nil
			case "gone":
				return nil, Failf(CodeActionUnavailable, "no field to type %s into", a["text"])
			}
			return map[string]any{"sensitive": false, "value": a["text"]}, nil
		}}
	must(t, e.reg.Register(typing))
	for _, field := range []string{"password", "name", "gone"} {
		args, _ := json.Marshal(map[string]string{"field": field, "text": "typed-" + field + "-text"})
		e.reg.Call(ctx, &Call{Tool: "type_text", Arguments: args})
	}
	for _, r := range e.rows(storage.AuditFilter{Tool: "type_text"}) {
		var a map[string]any
		json.Unmarshal(r.Arguments, &a)
		switch a["field"] {
		case "name":
			if a["text"] != "typed-name-text" {
				t.Errorf("ordinary typing lost: %s", r.Arguments)
			}
		default:
			if a["text"] != Redacted || strings.Contains(r.Result, "typed-") {
				t.Errorf("%v: text kept: %s / %s", a["field"], r.Arguments, r.Result)
			}
		}
	}
}

// The log file's warning about a dangerous call shows the same shape.
func TestDangerousWarningKeepsShapes(t *testing.T) {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logged bytes.Buffer
	reg := NewRegistry(Options{Settings: config.NewLive(db, nil), Log: zerolog.New(&logged)})
	tool := Tool{Name: "danger", Kind: KindRead, Dangerous: true, AuditShape: []string{"body"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"body":{"type":"string"},"token":{"type":"string"}}}`),
		Run:        func(ctx context.Context, c *Call) (any, error) { return "ok", nil }}
	must(t, reg.Register(tool))
	reg.Call(context.Background(), &Call{Tool: "danger", Arguments: json.RawMessage(`{"body":"BODY-TEXT","token":"tok-123456"}`)})
	if s := logged.String(); !strings.Contains(s, "running a dangerous tool") || strings.Contains(s, "BODY-TEXT") || strings.Contains(s, "tok-123456") || !strings.Contains(s, sha("BODY-TEXT")) {
		t.Errorf("log line %s", s)
	}
}
