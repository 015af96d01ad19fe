package store_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/gateway/store/storetest"
)

func eachEngine(t *testing.T, fn func(t *testing.T, dsn string)) {
	for _, e := range storetest.Engines() {
		t.Run(e, func(t *testing.T) { fn(t, storetest.DSN(t, e)) })
	}
}

func open(t *testing.T, dsn string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var ctx = context.Background()

func TestMigrationsConcurrentAndIdempotent(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		// Several processes starting at once on a new database: every one ends at
		// the current schema, none fails.
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := store.Open(ctx, dsn)
				if err == nil {
					s.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		s := open(t, dsn)
		if g, err := s.Generation(ctx); err != nil || g != 1 {
			t.Fatalf("generation %d, %v", g, err)
		}
	})
}

func TestSQLiteFileIsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dsn := storetest.SQLite(t)
	open(t, dsn)
	st, err := os.Stat(dsn)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
}

func TestConfigurationAudited(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		if _, err := s.SetUpstream(ctx, "cli:test", store.Upstream{Name: "oa", Kind: "openai", BaseURL: "http://127.0.0.1:1/v1/", APIKey: "sk-secret"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetUpstream(ctx, "cli:test", store.Upstream{Name: "an", Kind: "anthropic", BaseURL: "http://127.0.0.1:2"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetUpstream(ctx, "cli:test", store.Upstream{Name: "bad", Kind: "gemini", BaseURL: "http://x"}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("unknown kind: %v", err)
		}
		if err := s.SetRoute(ctx, "cli:test", store.Route{Model: "gpt", Upstream: "oa", Fallbacks: []string{"an"}}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("a fallback of the other wire format must be refused: %v", err)
		}
		if err := s.SetRoute(ctx, "cli:test", store.Route{Model: "gpt", Upstream: "nope"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown upstream: %v", err)
		}
		if err := s.SetRoute(ctx, "cli:test", store.Route{Model: "gpt", Upstream: "oa", UpstreamModel: "gpt-4o-mini"}); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveUpstream(ctx, "cli:test", "oa"); !errors.Is(err, store.ErrInUse) {
			t.Fatalf("removing a routed upstream: %v", err)
		}
		tok := store.TokenHash{ID: "id1", Salt: "s", Hash: "h"}
		if err := s.AddUser(ctx, "cli:test", store.User{Name: "alice", Team: "web", DailyTokens: 100, Models: []string{"gpt"}}, tok); err != nil {
			t.Fatal(err)
		}
		if err := s.AddUser(ctx, "cli:test", store.User{Name: "alice"}, store.TokenHash{ID: "id2"}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second alice: %v", err)
		}
		if err := s.AddUser(ctx, "cli:test", store.User{Name: "<script>"}, store.TokenHash{ID: "id3"}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("bad name: %v", err)
		}
		yes := true
		if err := s.UpdateUser(ctx, "admin:root", "alice", store.UserChange{Disabled: &yes}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateUser(ctx, "admin:root", "bob", store.UserChange{Disabled: &yes}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown user: %v", err)
		}
		if err := s.SetTeam(ctx, "cli:test", store.Team{Name: "web", DailyTokens: 1000, RPM: 10}); err != nil {
			t.Fatal(err)
		}
		cfg, err := s.LoadConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Generation != 7 {
			t.Errorf("generation %d after six changes", cfg.Generation)
		}
		if len(cfg.Users) != 1 || !cfg.Users[0].Disabled || cfg.Users[0].TokenHash != "h" || cfg.Users[0].Models[0] != "gpt" {
			t.Errorf("users %+v", cfg.Users)
		}
		if len(cfg.Teams) != 1 || cfg.Teams[0].Members != 1 || cfg.Teams[0].DailyTokens != 1000 {
			t.Errorf("teams %+v", cfg.Teams)
		}
		if cfg.Upstreams[1].APIKey != "sk-secret" || cfg.Upstreams[1].BaseURL != "http://127.0.0.1:1/v1" {
			t.Errorf("upstreams %+v", cfg.Upstreams)
		}
		listed, _ := s.Upstreams(ctx, false)
		for _, u := range listed {
			if u.APIKey != "" {
				t.Errorf("listing returned a key")
			}
		}
		if cfg.Routes[0].UpstreamModel != "gpt-4o-mini" {
			t.Errorf("routes %+v", cfg.Routes)
		}
		acts, err := s.AdminActions(ctx, store.ActionFilter{})
		if err != nil || len(acts) != 6 {
			t.Fatalf("%d admin actions, %v", len(acts), err)
		}
		if acts[1].Action != "user.disable" || acts[1].Actor != "admin:root" || acts[1].Target != "alice" {
			t.Errorf("newest but one %+v", acts[1])
		}
		for _, a := range acts {
			if a.Detail == "" || strings.Contains(a.Detail, "sk-secret") {
				t.Errorf("admin action detail %q", a.Detail)
			}
		}
		mine, _ := s.AdminActions(ctx, store.ActionFilter{User: "root"})
		if len(mine) != 1 {
			t.Errorf("actions by root: %+v", mine)
		}
	})
}

// TestReserveConcurrent is the quota's core promise at the store: 200 requests
// reserving at once against one daily limit never hold more than the limit plus
// one request's reservation, and the minute's request limit admits exactly its
// number.
func TestReserveConcurrent(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		const limit, each, n, rpm = 1000, 30, 200, 50
		day, minute := store.Day(time.Now()), store.Minute(time.Now())
		var admitted, refusedTokens, refusedRPM atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &store.Reservation{ID: store.NewID(time.Now()), Instance: "i1", Claims: []store.Claim{
					{Scope: store.UserScope("u", store.Tokens), Bucket: day, Amount: each, Limit: limit},
					{Scope: store.UserScope("u", store.Requests), Bucket: minute, Amount: 1, Limit: rpm, Count: true},
				}}
				err := s.Reserve(ctx, r)
				var ref *store.Refused
				switch {
				case err == nil:
					admitted.Add(1)
				case errors.As(err, &ref) && ref.Claim.Count:
					refusedRPM.Add(1)
				case errors.As(err, &ref):
					refusedTokens.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		c, _ := s.Counter(ctx, store.UserScope("u", store.Tokens), day)
		r, _ := s.Counter(ctx, store.UserScope("u", store.Requests), minute)
		t.Logf("admitted %d, refused for tokens %d, for requests %d; reserved %d of %d", admitted.Load(), refusedTokens.Load(), refusedRPM.Load(), c.Reserved, limit)
		if c.Reserved > limit+each || c.Reserved != admitted.Load()*each {
			t.Fatalf("reserved %d for %d admitted, limit %d", c.Reserved, admitted.Load(), limit)
		}
		if admitted.Load() != (limit+each-1)/each {
			t.Fatalf("admitted %d, want %d", admitted.Load(), (limit+each-1)/each)
		}
		// Refused for tokens does not count a request; the requests counter holds
		// every admission that passed it.
		if r.Used > rpm {
			t.Fatalf("requests counted %d over a limit of %d", r.Used, rpm)
		}
	})
}

func TestSettleAndUsage(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
		s.Now = func() time.Time { return now }
		day := store.Day(now)
		res := &store.Reservation{ID: "r1", Instance: "i1", Claims: []store.Claim{{Scope: store.UserScope("alice", store.Tokens), Bucket: day, Amount: 500, Limit: 1000}}}
		if err := s.Reserve(ctx, res); err != nil {
			t.Fatal(err)
		}
		if err := s.Extend(ctx, res, 100); err != nil {
			t.Fatal(err)
		}
		settle := func(res *store.Reservation, user, model string, in, out int64, status int, content *store.Content) {
			t.Helper()
			now = now.Add(time.Second) // ids order by time: one second apart, the newest last
			err := s.Settle(ctx, []store.Settlement{{Reservation: res, Content: content, Request: store.Request{
				Time: now, User: user, Team: "web", Dialect: "openai", Model: model, Upstream: "oa", UpstreamModel: model,
				Status: status, InputTokens: in, OutputTokens: out, Latency: 1500 * time.Microsecond, TraceID: "trace-1", Attempts: 1}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		settle(res, "alice", "gpt", 40, 60, 200, &store.Content{Request: `{"q":1}`, Response: "hi"})
		settle(nil, "alice", "gpt", 10, 0, 502, nil)
		settle(nil, "bob", "claude", 5, 5, 200, nil)
		c, _ := s.Counter(ctx, store.UserScope("alice", store.Tokens), day)
		if c.Reserved != 0 || c.Used != 110 {
			t.Fatalf("alice's counter %+v after settling", c)
		}
		tc, _ := s.Counter(ctx, store.TeamScope("web", store.Tokens), day)
		if tc.Used != 120 {
			t.Fatalf("team counter %+v", tc)
		}
		rows, err := s.Usage(ctx, store.UsageFilter{By: []string{"day", "user"}})
		if err != nil || len(rows) != 2 || rows[0].User != "alice" || rows[0].Requests != 2 || rows[0].Errors != 1 || rows[0].InputTokens != 50 || rows[0].Day != "2026-03-04" {
			t.Fatalf("usage %+v %v", rows, err)
		}
		reqs, err := s.Requests(ctx, store.RequestFilter{User: "alice"})
		if err != nil || len(reqs) != 2 || reqs[1].TraceID != "trace-1" || reqs[1].LatencyMS != 1.5 {
			t.Fatalf("requests %+v %v", reqs, err)
		}
		if errs, _ := s.Requests(ctx, store.RequestFilter{Errors: true}); len(errs) != 1 || errs[0].Status != 502 {
			t.Fatalf("errors %+v", errs)
		}
		if got, err := s.RequestContent(ctx, reqs[1].ID); err != nil || got.Response != "hi" {
			t.Fatalf("content %+v %v", got, err)
		}
		if _, err := s.RequestContent(ctx, reqs[0].ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("content not kept: %v", err)
		}
		now = now.Add(48 * time.Hour)
		if n, err := s.Prune(ctx, now.Add(-24*time.Hour)); err != nil || n != 3 {
			t.Fatalf("pruned %d, %v", n, err)
		}
		if rows, _ := s.Usage(ctx, store.UsageFilter{}); len(rows) != 2 {
			t.Fatalf("usage must outlive the audit: %+v", rows)
		}
	})
}

func TestOrphanedReservationsReleased(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		now := time.Now()
		s.Now = func() time.Time { return now }
		day := store.Day(now)
		scope := store.UserScope("u", store.Tokens)
		s.Beat(ctx, "dead", "127.0.0.1:1", now)
		s.Beat(ctx, "alive", "127.0.0.1:2", now)
		for i, inst := range []string{"dead", "alive"} {
			if err := s.Reserve(ctx, &store.Reservation{ID: inst, Instance: inst, Claims: []store.Claim{{Scope: scope, Bucket: day, Amount: int64(100 * (i + 1)), Limit: 1000}}}); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(2 * time.Minute)
		s.Beat(ctx, "alive", "127.0.0.1:2", now)
		n, err := s.ReleaseOrphans(ctx, time.Minute)
		if err != nil || n != 1 {
			t.Fatalf("released %d, %v", n, err)
		}
		if c, _ := s.Counter(ctx, scope, day); c.Reserved != 200 {
			t.Fatalf("counter %+v: only the dead instance's 100 should go", c)
		}
		// A released reservation cannot grow: the counter would hold it for ever.
		dead := &store.Reservation{ID: "dead", Instance: "dead", Claims: []store.Claim{{Scope: scope, Bucket: day, Amount: 100, Limit: 1000}}}
		if err := s.Extend(ctx, dead, 50); !errors.Is(err, store.ErrReleased) {
			t.Fatalf("extending a released reservation: %v", err)
		}
		if c, _ := s.Counter(ctx, scope, day); c.Reserved != 200 {
			t.Fatalf("counter %+v after the refused extension", c)
		}
	})
}

// A removed or replaced upstream key is not left readable in the database file or its
// write-ahead log, while the gateway still has them open.
func TestUpstreamKeysLeaveNoTrace(t *testing.T) {
	dsn := storetest.SQLite(t)
	s := open(t, dsn)
	old, replaced := "sk-gw-old-7f3a9c1e5b", "sk-gw-removed-2d8e4f6a0c"
	for _, u := range []store.Upstream{
		{Name: "rotated", Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: old},
		{Name: "rotated", Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-gw-new-kept"},
		{Name: "gone", Kind: "openai", BaseURL: "http://127.0.0.1:2/v1", APIKey: replaced},
	} {
		if _, err := s.SetUpstream(ctx, "cli:test", u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RemoveUpstream(ctx, "cli:test", "gone"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dsn, dsn + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, key := range []string{old, replaced} {
			if strings.Contains(string(b), key) {
				t.Errorf("%s still holds the key %s", f, key)
			}
		}
	}
}

// TestHolders: a refusal can say when held room frees: a living process's hold
// frees as its request ends; a stopped one's when the sweep releases it.
func TestHolders(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		now := time.Now()
		s.Now = func() time.Time { return now }
		day := store.Day(now)
		scope := store.UserScope("a_b%", store.Tokens)
		other := store.UserScope("aXb", store.Tokens)
		s.Beat(ctx, "dead", "127.0.0.1:1", now)
		if err := s.Reserve(ctx, &store.Reservation{ID: "r1", Instance: "dead", Claims: []store.Claim{{Scope: scope, Bucket: day, Amount: 100, Limit: 1000}}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(20 * time.Second)
		s.Beat(ctx, "alive", "127.0.0.1:2", now)
		live, freed, err := s.Holders(ctx, scope, day)
		want := now.Add(-20 * time.Second).Add(store.OrphanAfter + store.SweepEvery)
		if err != nil || live || !freed.Equal(want.Truncate(time.Microsecond)) {
			t.Fatalf("held by a stopped process: live %v, freed %v (want %v), %v", live, freed, want, err)
		}
		// The scope's name is matched exactly, not as a pattern.
		if live, freed, _ := s.Holders(ctx, other, day); live || !freed.IsZero() {
			t.Fatalf("another scope: %v %v", live, freed)
		}
		if err := s.Reserve(ctx, &store.Reservation{ID: "r2", Instance: "alive", Claims: []store.Claim{{Scope: scope, Bucket: day, Amount: 100, Limit: 1000}}}); err != nil {
			t.Fatal(err)
		}
		if live, _, _ := s.Holders(ctx, scope, day); !live {
			t.Fatal("a living process's hold is not seen")
		}
	})
}
