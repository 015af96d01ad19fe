package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ferryhq/ferry/gateway"
	"github.com/ferryhq/ferry/gateway/admin"
	"github.com/ferryhq/ferry/gateway/quota"
	"github.com/ferryhq/ferry/gateway/settings"
	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/gateway/token"
	"github.com/ferryhq/ferry/storage"
)

const gatewayUse = `usage:
  ferry gateway serve [--addr 127.0.0.1:8787] [--db PATH | --db postgres://…] [--tls-cert F --tls-key F] [--insecure]
                      [--spool DIR] [--spool-max-mb N] [--grace 30s]
  ferry gateway upstream add NAME --kind openai|anthropic --base-url URL [--api-key-stdin]
  ferry gateway upstream list [--json] | remove NAME | reseal
  ferry gateway route add MODEL --upstream NAME [--upstream-model M] [--fallback NAME]… [--weights W,W…]
  ferry gateway route list [--json] | remove MODEL
  ferry gateway price set UPSTREAM_MODEL --input P --output P [--cached P] [--reasoning P]   (P: per million tokens)
  ferry gateway price list [--json] | remove UPSTREAM_MODEL
  ferry gateway user add NAME [--team T] [--daily-tokens N] [--rpm N] [--daily-budget M] [--monthly-budget M] [--models A,B] [--admin]
  ferry gateway user set NAME [--team T] [--daily-tokens N] [--rpm N] [--daily-budget M] [--monthly-budget M] [--models A,B] [--admin=true|false]
  ferry gateway user list [--json] | disable NAME | enable NAME | rotate NAME | remove NAME
  ferry gateway key add USER --name N [--expires 720h | --expires 2026-12-31]
  ferry gateway key list [--user U] [--json] | remove USER --name N
  ferry gateway team set NAME [--daily-tokens N] [--rpm N] [--daily-budget M] [--monthly-budget M] | list [--json] | remove NAME
  ferry gateway usage [--user U] [--team T] [--model M] [--since DATE] [--until DATE] [--by day,user,team,model] [--json | --csv]
  ferry gateway audit [--user U] [--since DATE] [--trace ID] [--errors] [--limit N] [--json]
  ferry gateway config list | get KEY | set KEY VALUE | unset KEY

Every command takes --db (default: $FERRY_GATEWAY_DB, else gateway.db in Ferry's data
directory) and works while serve runs; serve picks changes up within a second.
user add and user rotate print the new token once: it is not stored, only its hash.`

func cmdGateway(args []string, stdout, stderr io.Writer) int {
	return gatewayMain(args, os.Stdin, stdout, stderr)
}

func gatewayMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, gatewayUse)
		return 2
	}
	g := &gw{stdin: stdin, stdout: stdout, stderr: stderr}
	sub, rest := args[0], args[1:]
	var verb string
	if sub != "serve" && sub != "usage" && sub != "audit" {
		if len(rest) == 0 {
			fmt.Fprintf(stderr, "ferry gateway %s: say what to do\n%s\n", sub, gatewayUse)
			return 2
		}
		verb, rest = rest[0], rest[1:]
	}
	switch sub + " " + verb {
	case "serve ":
		return g.serve(rest)
	case "upstream add":
		return g.upstreamAdd(rest)
	case "upstream reseal":
		fs := g.flags("upstream reseal")
		if _, code := g.parse(fs, rest, ""); code != 0 {
			return code
		}
		ctx := context.Background()
		st, ok := g.open(ctx)
		if !ok {
			return 1
		}
		defer st.Close()
		n, err := st.Reseal(ctx, g.actor())
		if err != nil {
			return g.fail(err)
		}
		fmt.Fprintf(g.stdout, "sealed %d upstream keys with the key of $%s\n", n, store.SecretKeyEnv)
		return 0
	case "upstream list", "upstream ls":
		return g.upstreamList(rest)
	case "upstream remove", "upstream rm":
		return g.named(rest, "upstream remove", func(ctx context.Context, st *store.Store, name string) error {
			return st.RemoveUpstream(ctx, g.actor(), name)
		}, "removed upstream %s")
	case "route add", "route set":
		return g.routeAdd(rest)
	case "route list", "route ls":
		return g.routeList(rest)
	case "route remove", "route rm":
		return g.named(rest, "route remove", func(ctx context.Context, st *store.Store, name string) error {
			return st.RemoveRoute(ctx, g.actor(), name)
		}, "removed the route of %s")
	case "price set":
		return g.priceSet(rest)
	case "price list", "price ls":
		return list(g, rest, "price list", (*store.Store).Prices, "UPSTREAM MODEL\tINPUT\tCACHED\tOUTPUT\tREASONING", func(p store.Price) []string {
			return []string{p.Model, quota.Money(p.Input), quota.Money(p.Cached), quota.Money(p.Output), quota.Money(p.Reasoning)}
		})
	case "price remove", "price rm":
		return g.named(rest, "price remove", func(ctx context.Context, st *store.Store, name string) error {
			return st.RemovePrice(ctx, g.actor(), name)
		}, "removed the price of %s")
	case "user add":
		return g.userAdd(rest)
	case "user set":
		return g.userSet(rest)
	case "user list", "user ls":
		return g.userList(rest)
	case "user disable", "user enable":
		off := verb == "disable"
		return g.named(rest, "user "+verb, func(ctx context.Context, st *store.Store, name string) error {
			return st.UpdateUser(ctx, g.actor(), name, store.UserChange{Disabled: &off})
		}, verb+"d user %s")
	case "user rotate":
		return g.userRotate(rest)
	case "user remove", "user rm":
		return g.named(rest, "user remove", func(ctx context.Context, st *store.Store, name string) error {
			return st.RemoveUser(ctx, g.actor(), name)
		}, "removed user %s (the audit keeps the name)")
	case "key add":
		return g.keyAdd(rest)
	case "key list", "key ls":
		return g.keyList(rest)
	case "key remove", "key rm":
		return g.keyRemove(rest)
	case "team set", "team add":
		return g.teamSet(rest)
	case "team list", "team ls":
		return g.teamList(rest)
	case "team remove", "team rm":
		return g.named(rest, "team remove", func(ctx context.Context, st *store.Store, name string) error {
			return st.RemoveTeam(ctx, g.actor(), name)
		}, "removed the limits of team %s")
	case "usage ":
		return g.usage(rest)
	case "audit ":
		return g.audit(rest)
	case "config list", "config get", "config set", "config unset":
		return g.config(verb, rest)
	}
	fmt.Fprintf(stderr, "ferry gateway: unknown command %q\n%s\n", strings.TrimSpace(sub+" "+verb), gatewayUse)
	return 2
}

type gw struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	db             string
}

func (g *gw) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway "+name, flag.ContinueOnError)
	fs.SetOutput(g.stderr)
	fs.StringVar(&g.db, "db", "", "the gateway's database: a file path or a postgres:// URL (default: $"+gateway.DBEnv+", else gateway.db in Ferry's data directory)")
	return fs
}

// actor names who makes a change from the command line, for the admin audit.
func (g *gw) actor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return "cli:" + name
}

func (g *gw) fail(err error) int {
	fmt.Fprintln(g.stderr, "ferry gateway:", err)
	return 1
}

func (g *gw) open(ctx context.Context) (*store.Store, bool) {
	dsn := g.db
	if dsn == "" {
		var err error
		if dsn, err = gateway.DefaultDB(storage.DefaultDataDir); err != nil {
			g.fail(err)
			return nil, false
		}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		g.fail(err)
		return nil, false
	}
	return st, true
}

// parse reads flags with one positional NAME before or after them.
func (g *gw) parse(fs *flag.FlagSet, args []string, want string) (string, int) {
	name, err := splitID(fs, args)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(g.stderr, "ferry gateway:", err)
		}
		return "", 2
	}
	if want != "" && name == "" {
		fmt.Fprintf(g.stderr, "ferry gateway %s: give the %s\n", fs.Name()[len("gateway "):], want)
		return "", 2
	}
	return name, 0
}

func (g *gw) named(args []string, cmd string, fn func(context.Context, *store.Store, string) error, done string) int {
	fs := g.flags(cmd)
	name, code := g.parse(fs, args, "name")
	if code != 0 {
		return code
	}
	return g.act(name, fn, done)
}

// act runs fn on the database of the flags already parsed: parsing them again
// would reset --db to its default.
func (g *gw) act(name string, fn func(context.Context, *store.Store, string) error, done string) int {
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	if err := fn(ctx, st, name); err != nil {
		return g.fail(err)
	}
	fmt.Fprintf(g.stdout, done+"\n", name)
	return 0
}

func (g *gw) serve(args []string) int {
	fs := g.flags("serve")
	addr := fs.String("addr", gateway.DefaultAddr, "address to listen on; beyond loopback it needs TLS (or --insecure)")
	cert := fs.String("tls-cert", "", "TLS certificate file (PEM)")
	key := fs.String("tls-key", "", "TLS key file (PEM)")
	insecure := fs.Bool("insecure", false, "allow a non-loopback --addr without TLS")
	spool := fs.String("spool", "", "folder of the local spool that keeps usage while the database is unreachable (default: beside a SQLite file; gateway-spool in Ferry's data directory for PostgreSQL)")
	spoolMB := fs.Int64("spool-max-mb", 1024, "largest the spool may grow; past it new requests are refused until the database is back")
	grace := fs.Duration("grace", 30*time.Second, "on SIGTERM, how long requests in flight may run before they are ended")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(g.stderr, "ferry gateway serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if g.db == "" {
		var err error
		if g.db, err = gateway.DefaultDB(storage.DefaultDataDir); err != nil {
			return g.fail(err)
		}
	}
	if *spool == "" && store.IsPostgres(g.db) {
		d, err := storage.DefaultDataDir()
		if err != nil {
			return g.fail(err)
		}
		*spool = filepath.Join(d, "gateway-spool")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := gateway.Serve(ctx, gateway.Options{Addr: *addr, DB: g.db, TLSCert: *cert, TLSKey: *key, Insecure: *insecure,
		Spool: *spool, SpoolMax: *spoolMB << 20, Grace: *grace, MetricsToken: os.Getenv(gateway.MetricsTokenEnv),
		Log: gateway.Logger(g.stderr),
		Ready: func(u string) {
			fmt.Fprintf(g.stdout, "ferry gateway: listening on %s (admin page: %s/admin)\n", u, u)
		}})
	if err != nil {
		return g.fail(err)
	}
	return 0
}

func (g *gw) upstreamAdd(args []string) int {
	fs := g.flags("upstream add")
	kind := fs.String("kind", "", "wire format: openai (OpenAI and compatible servers) or anthropic")
	base := fs.String("base-url", "", "the vendor's base URL, e.g. https://api.openai.com/v1 or https://api.anthropic.com")
	keyStdin := fs.Bool("api-key-stdin", false, "read the upstream's API key from stdin")
	name, code := g.parse(fs, args, "upstream's name")
	if code != 0 {
		return code
	}
	var key string
	if *keyStdin {
		b, err := io.ReadAll(io.LimitReader(g.stdin, 64<<10))
		if err != nil {
			return g.fail(err)
		}
		key = strings.TrimSpace(string(b))
		if key == "" {
			return g.fail(errors.New("--api-key-stdin: stdin was empty"))
		}
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	created, err := st.SetUpstream(ctx, g.actor(), store.Upstream{Name: name, Kind: *kind, BaseURL: *base, APIKey: key})
	if err != nil {
		return g.fail(err)
	}
	verb := "updated"
	if created {
		verb = "added"
	}
	fmt.Fprintf(g.stdout, "%s upstream %s (%s, %s)\n", verb, name, *kind, strings.TrimRight(*base, "/"))
	return 0
}

func (g *gw) jsonOut(v any) int {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return g.fail(err)
	}
	return 0
}

func (g *gw) table(header string, rows [][]string) {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// list is every list command: --json prints the rows as JSON, else a table.
func list[T any](g *gw, args []string, name string, fetch func(*store.Store, context.Context) ([]T, error), header string, row func(T) []string) int {
	fs := g.flags(name)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, code := g.parse(fs, args, ""); code != 0 {
		return code
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	items, err := fetch(st, ctx)
	if err != nil {
		return g.fail(err)
	}
	if *asJSON {
		return g.jsonOut(items)
	}
	var rows [][]string
	for _, it := range items {
		rows = append(rows, row(it))
	}
	g.table(header, rows)
	return 0
}

func (g *gw) upstreamList(args []string) int {
	return list(g, args, "upstream list", func(st *store.Store, ctx context.Context) ([]store.Upstream, error) { return st.Upstreams(ctx, false) },
		"NAME\tKIND\tBASE URL\tKEY", func(u store.Upstream) []string {
			key := "no"
			if u.HasKey {
				key = "yes"
			}
			return []string{u.Name, u.Kind, u.BaseURL, key}
		})
}
func (g *gw) routeAdd(args []string) int {
	fs := g.flags("route add")
	up := fs.String("upstream", "", "the upstream that serves the model")
	upModel := fs.String("upstream-model", "", "the model's name at the upstream (default: the same)")
	var fallbacks listFlag
	fs.Var(&fallbacks, "fallback", "an upstream to try, in order, when the ones before fail before answering (repeatable)")
	weights := fs.String("weights", "", "spread requests over --upstream and each --fallback in these proportions, e.g. 3,1 (default: the upstream first)")
	model, code := g.parse(fs, args, "model name")
	if code != 0 {
		return code
	}
	if *up == "" {
		fmt.Fprintln(g.stderr, "ferry gateway route add: --upstream is required")
		return 2
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	r := store.Route{Model: model, Upstream: *up, UpstreamModel: *upModel, Fallbacks: fallbacks}
	for _, w := range splitComma(*weights) {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			fmt.Fprintf(g.stderr, "ferry gateway route add: --weights %q: give whole numbers, e.g. 3,1\n", *weights)
			return 2
		}
		r.Weights = append(r.Weights, n)
	}
	if err := st.SetRoute(ctx, g.actor(), r); err != nil {
		return g.fail(err)
	}
	fmt.Fprintf(g.stdout, "model %s → %s", model, *up)
	if *upModel != "" && *upModel != model {
		fmt.Fprintf(g.stdout, " as %s", *upModel)
	}
	if len(fallbacks) > 0 {
		fmt.Fprintf(g.stdout, " (fallback: %s)", strings.Join(fallbacks, ", "))
	}
	fmt.Fprintln(g.stdout)
	return 0
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (g *gw) routeList(args []string) int {
	return list(g, args, "route list", (*store.Store).Routes, "MODEL\tUPSTREAM\tUPSTREAM MODEL\tFALLBACKS\tWEIGHTS", func(r store.Route) []string {
		var ws []string
		for _, w := range r.Weights {
			ws = append(ws, strconv.FormatInt(w, 10))
		}
		return []string{r.Model, r.Upstream, r.UpstreamModel, strings.Join(r.Fallbacks, ","), strings.Join(ws, ",")}
	})
}

type userFlags struct {
	team        *string
	dailyTokens *int64
	rpm         *int64
	models      *string
	admin       *bool
	dayBudget   *money
	monthBudget *money
}

// money is a flag of an amount in the price table's currency, kept in micros.
type money int64

func (m *money) String() string { return quota.Money(int64(*m)) }

func (m *money) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || f > 1e12 {
		return fmt.Errorf("give an amount like 12.50")
	}
	*m = money(math.Round(f * 1e6))
	return nil
}

func moneyFlag(fs *flag.FlagSet, name, usage string) *money {
	m := new(money)
	fs.Var(m, name, usage)
	return m
}

func (g *gw) userFlagSet(name string) (*flag.FlagSet, userFlags) {
	fs := g.flags(name)
	return fs, userFlags{
		team:        fs.String("team", "", "the user's team, whose limits the user shares"),
		dailyTokens: fs.Int64("daily-tokens", 0, "tokens a UTC day the user may use (0: no limit of the user's own)"),
		rpm:         fs.Int64("rpm", 0, "requests a minute (0: no limit of the user's own)"),
		models:      fs.String("models", "", "comma-separated models the user may call (default: every routed model)"),
		admin:       fs.Bool("admin", false, "the user may sign in to /admin"),
		dayBudget:   moneyFlag(fs, "daily-budget", "what the user may spend a UTC day, in the price table's currency (0: no budget of its own)"),
		monthBudget: moneyFlag(fs, "monthly-budget", "what the user may spend a UTC month (0: no budget of its own)"),
	}
}

func models(s string) []string {
	var l listFlag
	l.Set(s)
	if l == nil {
		return []string{}
	}
	return l
}

func (g *gw) priceSet(args []string) int {
	fs := g.flags("price set")
	in := moneyFlag(fs, "input", "price of a million input tokens (not read from the cache)")
	out := moneyFlag(fs, "output", "price of a million output tokens")
	cached := moneyFlag(fs, "cached", "price of a million input tokens read from the cache (default: the input's)")
	reasoning := moneyFlag(fs, "reasoning", "price of a million reasoning tokens (default: the output's)")
	name, code := g.parse(fs, args, "upstream model's name")
	if code != 0 {
		return code
	}
	return g.act(name, func(ctx context.Context, st *store.Store, name string) error {
		return st.SetPrice(ctx, g.actor(), store.Price{Model: name, Input: int64(*in), Output: int64(*out), Cached: int64(*cached), Reasoning: int64(*reasoning)})
	}, "set the price of %s")
}

func (g *gw) userAdd(args []string) int {
	fs, f := g.userFlagSet("user add")
	name, code := g.parse(fs, args, "user's name")
	if code != 0 {
		return code
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	tok, h := token.New()
	u := store.User{Name: name, Team: *f.team, DailyTokens: *f.dailyTokens, RPM: *f.rpm, Models: models(*f.models), Admin: *f.admin,
		DailyBudget: int64(*f.dayBudget), MonthlyBudget: int64(*f.monthBudget)}
	if err := st.AddUser(ctx, g.actor(), u, h); err != nil {
		return g.fail(err)
	}
	fmt.Fprintln(g.stdout, tok)
	fmt.Fprintf(g.stderr, "added user %s. The token above is shown this once: give it to %s now (the gateway keeps only its hash).\n", name, name)
	return 0
}

func (g *gw) userSet(args []string) int {
	fs, f := g.userFlagSet("user set")
	name, code := g.parse(fs, args, "user's name")
	if code != 0 {
		return code
	}
	var c store.UserChange
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "team":
			c.Team = f.team
		case "daily-tokens":
			c.DailyTokens = f.dailyTokens
		case "rpm":
			c.RPM = f.rpm
		case "models":
			m := models(*f.models)
			c.Models = &m
		case "admin":
			c.Admin = f.admin
		case "daily-budget":
			c.DailyBudget = (*int64)(f.dayBudget)
		case "monthly-budget":
			c.MonthlyBudget = (*int64)(f.monthBudget)
		}
	})
	return g.act(name, func(ctx context.Context, st *store.Store, name string) error {
		return st.UpdateUser(ctx, g.actor(), name, c)
	}, "updated user %s")
}

func (g *gw) keyAdd(args []string) int {
	fs := g.flags("key add")
	name := fs.String("name", "", "the key's name, e.g. laptop or ci")
	expires := fs.String("expires", "", "when it stops working: a duration from now (720h) or a date (2026-12-31, UTC); default: never")
	user, code := g.parse(fs, args, "user's name")
	if code != 0 {
		return code
	}
	k := store.Key{User: user, Name: *name}
	if *expires != "" {
		if d, err := time.ParseDuration(*expires); err == nil && d > 0 {
			k.ExpiresAt = time.Now().Add(d).UTC()
		} else if t, err := parseDay("expires", *expires); err == nil {
			k.ExpiresAt = t
		} else {
			return g.fail(err)
		}
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	tok, h := token.New()
	if err := st.AddKey(ctx, g.actor(), k, h); err != nil {
		return g.fail(err)
	}
	fmt.Fprintln(g.stdout, tok)
	fmt.Fprintf(g.stderr, "added key %s of user %s. The token above is shown this once (the gateway keeps only its hash).\n", *name, user)
	return 0
}

func (g *gw) keyList(args []string) int {
	fs := g.flags("key list")
	user := fs.String("user", "", "only this user's keys")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, code := g.parse(fs, args, ""); code != 0 {
		return code
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	keys, err := st.Keys(ctx, *user)
	if err != nil {
		return g.fail(err)
	}
	if *asJSON {
		if keys == nil {
			keys = []store.Key{}
		}
		return g.jsonOut(keys)
	}
	when := func(t time.Time, none string) string {
		if t.IsZero() {
			return none
		}
		return t.Format("2006-01-02 15:04")
	}
	var rows [][]string
	for _, k := range keys {
		rows = append(rows, []string{k.User, k.Name, when(k.CreatedAt, ""), when(k.ExpiresAt, "never"), when(k.LastUsed, "not yet")})
	}
	g.table("USER\tKEY\tCREATED (UTC)\tEXPIRES\tLAST USED", rows)
	return 0
}

func (g *gw) keyRemove(args []string) int {
	fs := g.flags("key remove")
	name := fs.String("name", "", "the key's name")
	user, code := g.parse(fs, args, "user's name")
	if code != 0 {
		return code
	}
	return g.act(user, func(ctx context.Context, st *store.Store, user string) error {
		return st.RemoveKey(ctx, g.actor(), user, *name)
	}, "removed the key "+*name+" of user %s")
}

func (g *gw) userRotate(args []string) int {
	fs := g.flags("user rotate")
	name, code := g.parse(fs, args, "user's name")
	if code != 0 {
		return code
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	tok, h := token.New()
	if err := st.RotateUser(ctx, g.actor(), name, h); err != nil {
		return g.fail(err)
	}
	fmt.Fprintln(g.stdout, tok)
	fmt.Fprintf(g.stderr, "user %s has a new token, shown this once; the old one no longer works (streams it had open are ended).\n", name)
	return 0
}

func (g *gw) userList(args []string) int {
	return list(g, args, "user list", (*store.Store).Users, "NAME\tTEAM\tSTATE\tROLE\tDAILY TOKENS\tRPM\tMODELS", func(u store.User) []string {
		state, role, ms := "enabled", "", strings.Join(u.Models, ",")
		if u.Disabled {
			state = "disabled"
		}
		if u.Admin {
			role = "admin"
		}
		if ms == "" {
			ms = "*"
		}
		return []string{u.Name, u.Team, state, role, limit(u.DailyTokens), limit(u.RPM), ms}
	})
}
func limit(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func (g *gw) teamSet(args []string) int {
	fs := g.flags("team set")
	tokens := fs.Int64("daily-tokens", 0, "tokens a UTC day the team's members may use together (0: no limit)")
	rpm := fs.Int64("rpm", 0, "requests a minute of the team's members together (0: no limit)")
	day := moneyFlag(fs, "daily-budget", "what the team's members may spend together a UTC day (0: no budget)")
	month := moneyFlag(fs, "monthly-budget", "what the team's members may spend together a UTC month (0: no budget)")
	name, code := g.parse(fs, args, "team's name")
	if code != 0 {
		return code
	}
	return g.act(name, func(ctx context.Context, st *store.Store, name string) error {
		return st.SetTeam(ctx, g.actor(), store.Team{Name: name, DailyTokens: *tokens, RPM: *rpm, DailyBudget: int64(*day), MonthlyBudget: int64(*month)})
	}, "set the limits of team %s")
}

func (g *gw) teamList(args []string) int {
	return list(g, args, "team list", (*store.Store).Teams, "TEAM\tMEMBERS\tDAILY TOKENS\tRPM", func(t store.Team) []string {
		return []string{t.Name, strconv.Itoa(t.Members), limit(t.DailyTokens), limit(t.RPM)}
	})
}

// parseDay reads a DATE flag: YYYY-MM-DD (UTC), or an RFC 3339 time.
func parseDay(flagName, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: give a date like 2026-03-04 (UTC) or a time like 2026-03-04T09:00:00Z", flagName, v)
}

func (g *gw) usage(args []string) int {
	fs := g.flags("usage")
	u := fs.String("user", "", "only this user")
	tm := fs.String("team", "", "only this team")
	m := fs.String("model", "", "only this model")
	since := fs.String("since", "", "from this day (YYYY-MM-DD, UTC)")
	until := fs.String("until", "", "up to and including this day")
	by := fs.String("by", "day,user,team,model", "group by these of day, user, team, model")
	asJSON := fs.Bool("json", false, "print JSON")
	asCSV := fs.Bool("csv", false, "print CSV")
	if _, code := g.parse(fs, args, ""); code != 0 {
		return code
	}
	f := store.UsageFilter{User: *u, Team: *tm, Model: *m, By: strings.Split(*by, ",")}
	var err error
	if f.Since, err = parseDay("since", *since); err != nil {
		return g.fail(err)
	}
	if f.Until, err = parseDay("until", *until); err != nil {
		return g.fail(err)
	}
	if !f.Until.IsZero() {
		f.Until = f.Until.Add(24 * time.Hour)
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	rows, err := st.Usage(ctx, f)
	if err != nil {
		return g.fail(err)
	}
	switch {
	case *asJSON:
		return g.jsonOut(rows)
	case *asCSV:
		if err := admin.WriteUsageCSV(csv.NewWriter(g.stdout), rows); err != nil {
			return g.fail(err)
		}
		return 0
	}
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.Day, r.User, r.Team, r.Model, itoa(r.Requests), itoa(r.Errors), itoa(r.InputTokens), itoa(r.OutputTokens), itoa(r.CachedTokens), quota.Money(r.CostMicros)})
	}
	g.table("DAY\tUSER\tTEAM\tMODEL\tREQUESTS\tERRORS\tINPUT\tOUTPUT\tCACHED\tCOST", out)
	return 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// auditRow is one line of `ferry gateway audit`: a request or an admin action.
type auditRow struct {
	Kind    string             `json:"kind"` // "request" or "admin"
	Time    time.Time          `json:"time"`
	Request *store.Request     `json:"request,omitempty"`
	Action  *store.AdminAction `json:"action,omitempty"`
}

func (g *gw) audit(args []string) int {
	fs := g.flags("audit")
	u := fs.String("user", "", "only this user's requests, and admin actions by or on them")
	since := fs.String("since", "", "from this day (YYYY-MM-DD, UTC) or time (RFC 3339)")
	trace := fs.String("trace", "", "only requests of this trace id (a Ferry host's run)")
	errs := fs.Bool("errors", false, "only failed requests")
	n := fs.Int("limit", 100, "at most this many rows")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, code := g.parse(fs, args, ""); code != 0 {
		return code
	}
	t, err := parseDay("since", *since)
	if err != nil {
		return g.fail(err)
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	reqs, err := st.Requests(ctx, store.RequestFilter{User: *u, Since: t, TraceID: *trace, Errors: *errs, Limit: *n})
	if err != nil {
		return g.fail(err)
	}
	var acts []store.AdminAction
	if *trace == "" && !*errs {
		if acts, err = st.AdminActions(ctx, store.ActionFilter{User: *u, Since: t, Limit: *n}); err != nil {
			return g.fail(err)
		}
	}
	var rows []auditRow
	for i := range reqs {
		rows = append(rows, auditRow{Kind: "request", Time: reqs[i].Time, Request: &reqs[i]})
	}
	for i := range acts {
		rows = append(rows, auditRow{Kind: "admin", Time: acts[i].Time, Action: &acts[i]})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Time.After(rows[j].Time) })
	if len(rows) > *n {
		rows = rows[:*n]
	}
	if *asJSON {
		if rows == nil {
			rows = []auditRow{}
		}
		return g.jsonOut(rows)
	}
	var out [][]string
	for _, r := range rows {
		ts := r.Time.Format("2006-01-02 15:04:05")
		if r.Request != nil {
			q := r.Request
			out = append(out, []string{ts, "request", q.User, fmt.Sprintf("%s → %s", q.Model, q.Upstream), strconv.Itoa(q.Status),
				fmt.Sprintf("in %d out %d", q.InputTokens, q.OutputTokens), q.TraceID, q.Error})
		} else {
			a := r.Action
			out = append(out, []string{ts, "admin", a.Actor, a.Action + " " + a.Target, "", "", "", a.Detail})
		}
	}
	g.table("TIME (UTC)\tKIND\tWHO\tWHAT\tSTATUS\tTOKENS\tTRACE\tDETAIL", out)
	return 0
}

func (g *gw) config(verb string, args []string) int {
	fs := g.flags("config " + verb)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	want := map[string]int{"list": 0, "get": 1, "set": 2, "unset": 1}[verb]
	if fs.NArg() != want {
		fmt.Fprintln(g.stderr, "usage: ferry gateway config list | get KEY | set KEY VALUE | unset KEY")
		return 2
	}
	var spec settings.Setting
	if want > 0 {
		var err error
		if spec, err = settings.Lookup(fs.Arg(0)); err != nil {
			fmt.Fprintln(g.stderr, "ferry gateway:", err)
			return 2
		}
	}
	ctx := context.Background()
	st, ok := g.open(ctx)
	if !ok {
		return 1
	}
	defer st.Close()
	stored, err := st.Settings(ctx)
	if err != nil {
		return g.fail(err)
	}
	vals := settings.Values(stored)
	switch verb {
	case "list":
		var rows [][]string
		for _, s := range settings.All {
			src := "default"
			if _, ok := stored[s.Key]; ok {
				src = "set"
			}
			rows = append(rows, []string{s.Key, vals.Get(s.Key), src, s.Doc})
		}
		g.table("KEY\tVALUE\t\tWHAT", rows)
	case "get":
		fmt.Fprintln(g.stdout, vals.Get(spec.Key))
	case "set":
		v, err := spec.Check(fs.Arg(1))
		if err != nil {
			fmt.Fprintln(g.stderr, "ferry gateway:", err)
			return 2
		}
		if err := st.SetSetting(ctx, g.actor(), spec.Key, v); err != nil {
			return g.fail(err)
		}
		fmt.Fprintf(g.stdout, "%s = %s\n", spec.Key, v)
	case "unset":
		if err := st.UnsetSetting(ctx, g.actor(), spec.Key); err != nil {
			return g.fail(err)
		}
		fmt.Fprintf(g.stdout, "%s = %s (default)\n", spec.Key, spec.Default)
	}
	return 0
}
