package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAuditLogWriteQueryExport(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := db.OpenAuditLog(AuditOptions{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				n := g*250 + i
				e := AuditEntry{Time: base.Add(time.Duration(n) * time.Second), CallID: "c", Tool: []string{"a", "b"}[n%2],
					Arguments: json.RawMessage(`{"n":1}`), Success: n%3 != 0, Depth: 1, TraceID: "t", Duration: 1500 * time.Microsecond}
				if !e.Success {
					e.Code = "HANDLER_ERROR"
				}
				if n%10 == 0 {
					e.Origin = "https://x.example"
				}
				if n%4 == 0 {
					e.Caller = "mcp"
				}
				a.Record(e)
			}
		}()
	}
	wg.Wait()
	// Close drains: nothing recorded before it is lost.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	// A row recorded after Close is still written (synchronously).
	a.Record(AuditEntry{Time: base.Add(-time.Hour), Tool: "late", Arguments: json.RawMessage(`{}`)})
	db.Close()

	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.QueryAudit(ctx, AuditFilter{Limit: 5000})
	if err != nil || len(all) != 1001 {
		t.Fatalf("%d rows, %v", len(all), err)
	}
	if !all[0].Time.Equal(base.Add(999*time.Second)) || all[0].Duration != 1500*time.Microsecond || all[0].Depth != 1 {
		t.Fatalf("newest row %+v", all[0])
	}
	for _, c := range []struct {
		f    AuditFilter
		want int
	}{
		{AuditFilter{Tool: "a", Limit: 5000}, 500},
		{AuditFilter{Code: "HANDLER_ERROR", Limit: 5000}, 334},
		{AuditFilter{Origin: "https://x.example", Limit: 5000}, 100},
		{AuditFilter{Caller: "mcp", Limit: 5000}, 250},
		{AuditFilter{Caller: "mcp", Origin: "https://x.example", Limit: 5000}, 50},
		{AuditFilter{Since: base.Add(10 * time.Second), Until: base.Add(20 * time.Second)}, 10},
		{AuditFilter{}, 100},
	} {
		rows, err := db.QueryAudit(ctx, c.f)
		if err != nil || len(rows) != c.want {
			t.Errorf("%+v: %d rows, want %d (%v)", c.f, len(rows), c.want, err)
		}
	}
	// EachAudit streams newest first, every row when no limit is given.
	var seen []AuditEntry
	if err := db.EachAudit(ctx, AuditFilter{Caller: "mcp"}, func(e AuditEntry) error {
		seen = append(seen, e)
		return nil
	}); err != nil || len(seen) != 250 {
		t.Fatalf("EachAudit: %d rows, %v", len(seen), err)
	}
	if !seen[0].Time.Equal(base.Add(996*time.Second)) || !seen[0].Time.After(seen[1].Time) || seen[0].Caller != "mcp" {
		t.Fatalf("EachAudit order: %v, %v", seen[0].Time, seen[1].Time)
	}
	seen = nil
	db.EachAudit(ctx, AuditFilter{Caller: "mcp", Limit: 3}, func(e AuditEntry) error {
		seen = append(seen, e)
		return nil
	})
	if len(seen) != 3 {
		t.Fatalf("EachAudit with limit 3: %d rows", len(seen))
	}
	var buf bytes.Buffer
	n, err := db.ExportAuditJSONL(ctx, &buf, AuditFilter{Tool: "b"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if err != nil || n != 500 || len(lines) != 500 {
		t.Fatalf("export %d rows, %d lines, %v", n, len(lines), err)
	}
	var first AuditEntry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Tool != "b" || !first.Time.Equal(base.Add(time.Second)) {
		t.Fatalf("first exported line %s (%v)", lines[0], err)
	}
	if pruned, err := db.PruneAudit(ctx, base.Add(100*time.Second)); err != nil || pruned != 101 {
		t.Fatalf("pruned %d, %v", pruned, err)
	}
}

func TestAuditRetentionPrunesAtStart(t *testing.T) {
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	if err := db.insertAudit(context.Background(), []AuditEntry{
		{Time: now.Add(-40 * 24 * time.Hour), Tool: "old"},
		{Time: now.Add(-time.Hour), Tool: "new"},
	}); err != nil {
		t.Fatal(err)
	}
	a := db.OpenAuditLog(AuditOptions{Retention: func() time.Duration { return 30 * 24 * time.Hour }})
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close()
	rows, _ := db.QueryAudit(context.Background(), AuditFilter{})
	if len(rows) != 1 || rows[0].Tool != "new" {
		t.Fatalf("rows after retention: %+v", rows)
	}
}
