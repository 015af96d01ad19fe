package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/storage"
)

// TestHostRunThroughGateway is the done-when: a Ferry host, given the
// gateway as an ordinary provider with a user's token, runs an agent that calls a
// tool and answers; every model request of the run is in the gateway's audit
// under the trace id the host's own audit log gives the run's tool calls.
func TestHostRunThroughGateway(t *testing.T) {
	for _, kind := range []string{modeltest.OpenAI, modeltest.Anthropic} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, "sqlite")
			fake := modeltest.New(t, kind,
				modeltest.Tools("create_task", `{"subject":"water the plants"}`),
				modeltest.Text("I added the task."))
			fake.SetKey("sk-vendor-key-kept-by-the-gateway")
			e.must("sk-vendor-key-kept-by-the-gateway\n", "upstream", "add", "vendor", "--kind", kind, "--base-url", fake.URL, "--api-key-stdin")
			e.must("", "route", "add", "team-model", "--upstream", "vendor", "--upstream-model", "vendor-model-1")
			tok := e.addUser("carol", "--team", "ops", "--daily-tokens", "100000")
			gw := e.serve()

			base := gw.URL + "/v1"
			if kind == modeltest.Anthropic {
				base = gw.URL
			}
			hostHome := t.TempDir()
			host := func(stdin string, args ...string) (string, string) {
				t.Helper()
				cmd := exec.Command(ferryBin, args...)
				cmd.Env = append(os.Environ(), "FERRY_HOME="+hostHome)
				cmd.Stdin = strings.NewReader(stdin)
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("ferry %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
				}
				return out.String(), errb.String()
			}
			host(tok+"\n", "provider", "add", "team", "--kind", kind, "--base-url", base, "--model", "team-model", "--api-key-stdin", "--default")
			out, errs := host("", "run", "Remind me to water the plants.")
			if strings.TrimSpace(out) != "I added the task." || !strings.Contains(errs, "[tool] create_task ok") {
				t.Fatalf("run: %q %q", out, errs)
			}
			// The vendor saw the gateway's key and its own model name.
			for _, r := range fake.Requests() {
				if r.Model != "vendor-model-1" {
					t.Errorf("vendor got model %q", r.Model)
				}
			}

			db, err := storage.OpenFile(filepath.Join(hostHome, storage.DatabaseFile))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			entries, err := db.QueryAudit(context.Background(), storage.AuditFilter{})
			if err != nil || len(entries) == 0 {
				t.Fatalf("host audit: %v %v", entries, err)
			}
			trace := entries[0].TraceID
			if trace == "" {
				t.Fatal("the host's audit row has no trace id")
			}
			rows := e.requests(2, "--trace", trace)
			if len(rows) != 2 {
				t.Fatalf("the gateway's audit has %d rows of trace %s: %+v", len(rows), trace, e.requests(0))
			}
			for _, r := range rows {
				if r.User != "carol" || r.Team != "ops" || r.Model != "team-model" || r.Status != 200 || r.InputTokens == 0 || r.Dialect != kind {
					t.Errorf("gateway audit row %+v", r)
				}
			}
		})
	}
}
