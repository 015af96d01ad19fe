// Package gateway is `ferry gateway serve`: the team's model gateway. It wires the
// store, the proxy, the admin page and the metrics into one HTTP server, keeps the
// serving configuration fresh (a change made by `ferry gateway …` in another
// process takes effect within a second), beats so that other processes can
// release what a dead one held, and prunes the audit by its retention.
package gateway

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/gateway/admin"
	"github.com/ferryhq/ferry/gateway/auth"
	"github.com/ferryhq/ferry/gateway/metrics"
	"github.com/ferryhq/ferry/gateway/proxy"
	"github.com/ferryhq/ferry/gateway/settings"
	"github.com/ferryhq/ferry/gateway/store"
)

// DefaultAddr is where serve listens unless told otherwise: loopback only.
const DefaultAddr = "127.0.0.1:8787"

// DBEnv names the variable that gives every `ferry gateway` command its database
// when --db is not given.
const DBEnv = "FERRY_GATEWAY_DB"

// MetricsTokenEnv names the variable that, when set, puts /metrics behind a
// bearer token of its value.
const MetricsTokenEnv = "FERRY_GATEWAY_METRICS_TOKEN"

// DefaultDB is the database commands use without --db: $FERRY_GATEWAY_DB, else
// gateway.db in Ferry's data directory.
func DefaultDB(dataDir func() (string, error)) (string, error) {
	if v := os.Getenv(DBEnv); v != "" {
		return v, nil
	}
	d, err := dataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "gateway.db"), nil
}

// Options configure serve.
type Options struct {
	Addr     string
	DB       string
	TLSCert  string
	TLSKey   string
	Insecure bool // allow a non-loopback address without TLS
	// Spool is the folder of the local journal that keeps usage the database
	// has not yet taken (default: beside a SQLite file; required for
	// PostgreSQL). The gateway processes of one database on one machine share it.
	Spool string
	// SpoolMax bounds the journal's file (default 1 GiB): past it, new requests
	// are refused until the database is back.
	SpoolMax int64
	// Grace is how long a stop waits for requests in flight (default 30 s):
	// those still running then are ended with the dialect's error, and settled.
	Grace time.Duration
	// MetricsToken, when set, is required as a bearer token by /metrics.
	MetricsToken string
	Log          zerolog.Logger
	// Ready hears the address actually listened on (useful with port 0).
	Ready func(addr string)
}

// CheckAddr refuses to serve a non-loopback address in the clear: tokens and
// prompts would cross the network readable by anyone on the path.
func CheckAddr(addr string, tlsOn, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: give host:port, e.g. 127.0.0.1:8787 or 0.0.0.0:8787", addr)
	}
	if tlsOn || insecure || isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("--addr %s listens on %s, beyond this machine, without TLS: users' tokens and prompts would cross the network in the clear. Give --tls-cert and --tls-key, put it behind a TLS proxy on loopback, or pass --insecure to accept the risk", addr, shown)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve runs the gateway until ctx ends, then stops taking requests, lets those
// in flight finish (up to 30 s), writes their audit and leaves.
func Serve(ctx context.Context, o Options) error {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	tlsOn := o.TLSCert != "" || o.TLSKey != ""
	if tlsOn && (o.TLSCert == "" || o.TLSKey == "") {
		return errors.New("give both --tls-cert and --tls-key")
	}
	if err := CheckAddr(o.Addr, tlsOn, o.Insecure); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if tlsOn {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return fmt.Errorf("loading the TLS certificate: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	st, err := store.Open(ctx, o.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	cfg, err := st.LoadConfig(ctx)
	if err != nil {
		return err
	}
	started := time.Now()
	instance := store.NewID(started)
	if o.Spool == "" {
		if store.IsPostgres(o.DB) {
			return errors.New("give --spool DIR: the folder where this machine's gateway keeps usage the database has not yet taken")
		}
		o.Spool = SpoolFor(o.DB)
	}
	if o.SpoolMax <= 0 {
		o.SpoolMax = 1 << 30
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	j, left, err := proxy.OpenJournal(o.Spool, instance, o.SpoolMax)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		o.Log.Warn().Int("requests", len(left)).Str("spool", o.Spool).Msg("settling the requests a stopped gateway left in the spool")
	}
	reg := &metrics.Registry{}
	px := proxy.New(st, j, left, instance, reg, o.Log)
	px.SetSnapshot(auth.NewSnapshot(cfg))
	reload := func(ctx context.Context) error {
		c, err := st.LoadConfig(ctx)
		if err != nil {
			return err
		}
		px.SetSnapshot(auth.NewSnapshot(c))
		return nil
	}
	adm := admin.New(st, px.Snapshot, reload, o.Log)

	mux := http.NewServeMux()
	mux.Handle("/v1/", px.Handler())
	mux.Handle("/admin", adm)
	mux.Handle("/admin/", adm)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","version":%q,"generation":%d}`+"\n", buildinfo.Version, px.Snapshot().Generation)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if o.MetricsToken != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(o.MetricsToken)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				http.Error(w, "metrics need the token $"+MetricsTokenEnv+" gave serve, as Authorization: Bearer …", http.StatusUnauthorized)
				return
			}
		}
		w.Header().Set("Content-Type", metrics.ContentType)
		reg.Write(w)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/admin", http.StatusFound)
	})

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	base, endRequests := context.WithCancelCause(context.Background())
	defer endRequests(nil)
	srv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return base },
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         tlsCfg,
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
		ln = tls.NewListener(ln, tlsCfg)
	}
	addr := ln.Addr().String()
	if err := st.Beat(ctx, instance, addr, started); err != nil {
		ln.Close()
		return err
	}
	o.Log.Info().Str("addr", scheme+"://"+addr).Str("database", st.Where()).Str("engine", st.Engine()).Str("instance", instance).Msg("gateway listening")
	if o.Ready != nil {
		o.Ready(scheme + "://" + addr)
	}

	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	go every(bg, time.Second, func() {
		g, err := st.Generation(bg)
		if err != nil {
			o.Log.Warn().Err(err).Msg("reading the configuration generation")
			return
		}
		if g != px.Snapshot().Generation {
			if err := reload(bg); err != nil {
				o.Log.Warn().Err(err).Msg("reloading the configuration")
			} else {
				o.Log.Info().Int64("generation", g).Msg("configuration reloaded")
			}
		}
	})
	go every(bg, 5*time.Second, func() {
		if err := st.TouchKeys(bg, px.TakeKeyUses()); err != nil {
			o.Log.Warn().Err(err).Msg("recording when keys were last used")
		}
	})
	go every(bg, store.BeatEvery, func() {
		if err := st.Beat(bg, instance, addr, started); err != nil {
			o.Log.Warn().Err(err).Msg("heartbeat")
		}
	})
	go every(bg, store.SweepEvery, func() {
		// A process on this machine that died leaves its journal: settled at
		// once, rather than released unaudited when it is found silent.
		if n, err := px.Adopt(); err != nil {
			o.Log.Warn().Err(err).Msg("taking over the spool of a stopped gateway")
		} else if n > 0 {
			o.Log.Warn().Int("requests", n).Msg("settling the requests a stopped gateway left in the spool")
		}
		if n, err := st.ReleaseOrphans(bg, store.OrphanAfter); err != nil {
			o.Log.Warn().Err(err).Msg("releasing reservations of stopped gateways")
		} else if n > 0 {
			o.Log.Warn().Int("reservations", n).Msg("released the quota held by a gateway process that stopped without settling")
		}
	})
	prune := func() {
		now := time.Now()
		st.PruneCounters(bg, store.Day(now)-1, store.Minute(now)-5)
		days := px.Snapshot().Settings.Int(settings.RetentionDays)
		if days <= 0 {
			return
		}
		if n, err := st.Prune(bg, now.Add(-time.Duration(days)*24*time.Hour)); err != nil {
			o.Log.Warn().Err(err).Msg("pruning the audit")
		} else if n > 0 {
			o.Log.Info().Int64("requests", n).Int64("retention_days", days).Msg("pruned the audit")
		}
	}
	go func() { prune(); every(bg, time.Hour, prune) }()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.Log.Info().Dur("grace", o.Grace).Msg("gateway stopping: finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		o.Log.Warn().Msg("the grace is over: ending the requests still in flight")
		// Each ends its answer with the dialect's error event and is settled
		// before its connection goes.
		endRequests(proxy.ErrShutdown)
		px.Wait()
		srv.Close()
	}
	px.Wait()
	px.Close()
	stopBG()
	st.Leave(context.Background(), instance)
	return nil
}

// SpoolFor is the spool folder of a SQLite database: beside its file.
func SpoolFor(db string) string { return db + ".spool" }

func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// Logger writes the serve log as JSON lines to w. No upstream key, user token or
// prompt is ever a field of it.
func Logger(w io.Writer) zerolog.Logger {
	return zerolog.New(w).With().Timestamp().Logger()
}
