package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"golang.org/x/text/width"
)

const auditUsage = `usage: ferry audit [--since DATE] [--until DATE] [--tool T] [--code C] [--caller K] [--origin O] [--limit N] [--json]

Prints the audit log: every tool call the pipeline saw, whoever made it and whatever
became of it (refusals included), newest first: the rows of the options page's audit
log. It reads the database in Ferry's data directory, so no host needs to be running.
How fresh: a running host queues each call's row as the call ends and writes what
has queued at once, so a call that has returned is listed within a second (mostly
within milliseconds); ferry call writes its row before it exits.

  --since DATE   only rows from DATE on
  --until DATE   only rows before DATE
  --tool T       only calls of the tool named T
  --code C       only results with code C: NOT_FOUND, INVALID_PARAMS, ACTION_UNAVAILABLE,
                 PERMISSION_DENIED, LOOP_DETECTED, RATE_LIMITED, USER_REJECTED,
                 CONFIRM_TIMEOUT, HANDLER_ERROR, TIMEOUT, EXPECTATION_FAILED
  --caller K     only calls made by K: model (an agent run), page, mcp (ferry mcp),
                 socket (another control-socket client), cli (ferry call), extension
  --origin O     only calls made for the page origin O (https://example.com)
  --limit N      at most N rows, the newest (default 100; 0: every matching row)
  --json         one JSON object a line, newest first, with every field of the row
                 (arguments, trace ids, duration_ns) instead of the table

DATE is one of
  2026-12-01             that day in local time: --since from its start, --until to its end
  2026-12-01T09:30       a local time (seconds and fractions optional)
  2026-12-01T09:30:00Z   an RFC 3339 time, with Z or an offset like +01:00
  90m, 1h, 7d, 2w, 1d12h that long ago (d is 24 hours, w is 7 days)
  today, yesterday, now

The table shows local times; its SUMMARY (the result, or the reason of a failure) is
cut to the terminal's width, or to $COLUMNS when the output is not a terminal, and
not cut when neither is known.
`

func cmdAudit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	since := fs.String("since", "", "")
	until := fs.String("until", "", "")
	tool := fs.String("tool", "", "")
	code := fs.String("code", "", "")
	caller := fs.String("caller", "", "")
	origin := fs.String("origin", "", "")
	limit := fs.Int("limit", 100, "")
	asJSON := fs.Bool("json", false, "")
	if done, c := parseFlags(fs, auditUsage, args, stdout, stderr); done {
		return c
	}
	f, err := auditFilter(auditFlags{*since, *until, *tool, *code, *caller, *origin, *limit}, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "ferry audit: %v\n", err)
		return 2
	}
	db, ok := openDB(stderr)
	if !ok {
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := db.EachAudit(ctx, f, func(e storage.AuditEntry) error { return enc.Encode(e) }); err != nil {
			fmt.Fprintln(stderr, "ferry audit:", err)
			return 1
		}
		return 0
	}
	var rows []storage.AuditEntry
	if err := db.EachAudit(ctx, f, func(e storage.AuditEntry) error {
		rows = append(rows, e)
		return nil
	}); err != nil {
		fmt.Fprintln(stderr, "ferry audit:", err)
		return 1
	}
	if len(rows) == 0 {
		fmt.Fprintln(stderr, "ferry audit: no rows match")
		return 0
	}
	writeAuditTable(stdout, rows, outputWidth(stdout), time.Now())
	if f.Limit > 0 && len(rows) == f.Limit {
		fmt.Fprintf(stderr, "ferry audit: the newest %d rows; --limit N shows more, --limit 0 all\n", f.Limit)
	}
	return 0
}

type auditFlags struct {
	since, until, tool, code, caller, origin string
	limit                                    int
}

// auditFilter checks the flags and turns them into the storage filter, so that a
// mistyped date or code is an error rather than an empty answer.
func auditFilter(a auditFlags, now time.Time) (storage.AuditFilter, error) {
	f := storage.AuditFilter{Tool: strings.TrimSpace(a.tool), Caller: strings.TrimSpace(a.caller), Limit: a.limit}
	var err error
	if f.Since, err = parseWhen("since", a.since, now, false); err != nil {
		return f, err
	}
	if f.Until, err = parseWhen("until", a.until, now, true); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, fmt.Errorf("--since %s is not before --until %s: no row could match", a.since, a.until)
	}
	if c := strings.ToUpper(strings.TrimSpace(a.code)); c != "" {
		if !slices.Contains(tools.Codes, tools.Code(c)) {
			names := make([]string, len(tools.Codes))
			for i, k := range tools.Codes {
				names[i] = string(k)
			}
			return f, fmt.Errorf("--code %q is not a result code; one of %s", a.code, strings.Join(names, ", "))
		}
		f.Code = c
	}
	if o := strings.TrimSpace(a.origin); o != "" {
		f.Origin = origins.Normalize([]string{o})[0]
	}
	if a.limit < 0 {
		return f, fmt.Errorf("--limit %d: give a number of rows, or 0 for all", a.limit)
	}
	return f, nil
}

// parseWhen reads a --since or --until value (auditUsage lists the forms). end says
// the value closes the range: a plain day then means the end of that day.
func parseWhen(flagName, v string, now time.Time, end bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	day := func(t time.Time) time.Time {
		t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t
	}
	switch strings.ToLower(v) {
	case "now":
		return now, nil
	case "today":
		return day(now), nil
	case "yesterday":
		return day(now.AddDate(0, 0, -1)), nil
	}
	if d, ok := parseAge(v); ok {
		return now.Add(-d), nil
	}
	// RFC 3339 allows a lower-case T and Z, and a space between date and time.
	norm := strings.ToUpper(v)
	if len(norm) > 10 && norm[10] == ' ' {
		norm = norm[:10] + "T" + norm[11:]
	}
	if t, err := time.Parse(time.RFC3339Nano, norm); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, norm, now.Location()); err == nil {
			return t, nil
		}
	}
	t, err := time.ParseInLocation("2006-01-02", norm, now.Location())
	if err == nil {
		return day(t), nil
	}
	why := "not a date, a time or an age"
	// A value shaped like a date is most likely a real date mistyped: say what is wrong
	// with it (month out of range, say).
	if dateShaped(norm) {
		if _, err := time.Parse(time.DateOnly, norm[:10]); err != nil {
			why = strings.TrimPrefix(err.Error()[strings.LastIndex(err.Error(), ":")+1:], " ")
		} else {
			why = "not a time like 2026-12-01T09:30:00Z"
		}
	}
	return time.Time{}, fmt.Errorf("--%s %q: %s; give a date (2026-12-01), a time (2026-12-01T09:30:00Z, or 2026-12-01T09:30 in local time), an age (90m, 1h, 7d, 2w) or today, yesterday, now", flagName, v, why)
}

// parseAge reads a span back from now: Go's durations (90m, 1h30m) with weeks and
// days in front (2w, 7d, 1d12h), a leading minus allowed (-1h reads as 1h).
func parseAge(v string) (time.Duration, bool) {
	v = strings.TrimPrefix(v, "-")
	if v == "" {
		return 0, false
	}
	var d time.Duration
	for _, u := range []struct {
		suffix byte
		unit   time.Duration
	}{{'w', 7 * 24 * time.Hour}, {'d', 24 * time.Hour}} {
		i := 0
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == 0 || i == len(v) || v[i] != u.suffix {
			continue
		}
		n, err := strconv.Atoi(v[:i])
		if err != nil || n > 100000 {
			return 0, false
		}
		d += time.Duration(n) * u.unit
		v = v[i+1:]
	}
	if v != "" {
		rest, err := time.ParseDuration(v)
		if err != nil || rest < 0 {
			return 0, false
		}
		d += rest
	}
	return d, true
}

// dateShaped says whether s starts like 2026-12-01.
func dateShaped(s string) bool {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// outputWidth is the width the table may fill: the terminal's, else $COLUMNS, else 0
// (nothing is cut).
func outputWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if n := terminalWidth(f); n > 0 {
			return n
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// writeAuditTable prints rows as aligned columns, one line each. With a width (0:
// none) the tool and origin columns are bounded, the duration goes when room is
// short, and each line is cut to fit, so the summary is what gives way.
func writeAuditTable(w io.Writer, rows []storage.AuditEntry, width int, now time.Time) {
	zone, _ := now.Zone()
	stamp := timeLayout(rows, now)
	cells := [][]string{{"TIME (" + zone + ")", "CALLER", "TOOL", "ORIGIN", "RESULT", "TOOK", "SUMMARY"}}
	for _, e := range rows {
		result := "ok"
		if !e.Success {
			result = e.Code
		}
		cells = append(cells, []string{
			e.Time.In(now.Location()).Format(stamp), orDash(e.Caller), orDash(e.Tool), orDash(e.Origin),
			orDash(result), took(e.Duration), e.Result,
		})
	}
	const tool, origin, took, summary = 2, 3, 5, 6
	bound := map[int]int{}
	if width > 0 {
		bound[tool], bound[origin] = 24, 32
	}
	widths := make([]int, summary)
	for _, row := range cells {
		for i := range row {
			row[i] = terminalSafe(row[i])
			if b, ok := bound[i]; ok {
				row[i] = cut(row[i], b)
			}
			if i < summary {
				widths[i] = max(widths[i], displayWidth(row[i]))
			}
		}
	}
	show := []int{0, 1, tool, origin, 4, took}
	if fixed := sumWidths(widths, show); width > 0 && width-fixed < 30 {
		show = show[:len(show)-1]
	}
	var b strings.Builder
	for _, row := range cells {
		b.Reset()
		for _, i := range show {
			b.WriteString(row[i])
			b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(row[i])+2))
		}
		b.WriteString(row[summary])
		line := strings.TrimRight(b.String(), " ")
		if width > 0 {
			line = cut(line, width)
		}
		fmt.Fprintln(w, line)
	}
}

// timeLayout is the shortest layout that tells the rows' times apart from any other
// day's: the time alone when every row is of today, the day without the year when
// every row is of this year.
func timeLayout(rows []storage.AuditEntry, now time.Time) string {
	today, thisYear := true, true
	for _, e := range rows {
		t := e.Time.In(now.Location())
		if t.Year() != now.Year() {
			thisYear = false
		}
		if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
			today = false
		}
	}
	switch {
	case today:
		return time.TimeOnly
	case thisYear:
		return "Jan 02 15:04:05"
	}
	return time.DateTime
}

func sumWidths(widths, cols []int) int {
	n := 0
	for _, i := range cols {
		n += widths[i] + 2
	}
	return n
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func took(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// terminalSafe puts a cell on one line and takes out what a terminal would act on:
// tool names, origins and reasons may come from a page, and a page's escape
// sequence must not reach the person's terminal as one.
func terminalSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return '\uFFFD'
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// displayWidth counts the columns s takes: two for East Asian wide characters,
// none for combining marks.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) {
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// cut shortens s to at most n columns, ending in … when anything was left out.
func cut(s string, n int) string {
	if displayWidth(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	used := 0
	for i, r := range s {
		if used+runeWidth(r) > n-1 {
			return s[:i] + "…"
		}
		used += runeWidth(r)
	}
	return s
}
