package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host"
	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/host/logfile"
	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// runHost is host mode: frames on stdin and stdout until the browser closes stdin.
//
// The browser waits for the first reply, so only what that reply needs comes before
// it: the log, and the caller's origin when it is the pinned extension. The database
// opens and migrates, the host is built and the control socket set up beside the
// first replies (host.Launcher). Another extension's origin is checked against the
// settings before anything is answered.
func runHost(origin string, stdin io.Reader, stdout, stderr io.Writer) int {
	// stdout belongs to the protocol; a stray print anywhere would corrupt a frame, so
	// the process's own os.Stdout now points at stderr.
	os.Stdout = os.Stderr
	if f, ok := stdin.(*os.File); ok {
		stdin = pollable(f)
		defer runtime.KeepAlive(f)
	}
	// The host's own heap is a few MiB, and one message may be as big: at the
	// collector's default goal (twice the live heap, at least 4 MiB) it ran every few
	// large calls, a quarter of their processor time. Five times the live heap, at
	// least 16 MiB, unless GOGC says otherwise.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}

	log := zerolog.New(stderr).With().Timestamp().Int("pid", os.Getpid()).Logger()
	dataDir, err := storage.DefaultDataDir()
	if err != nil {
		log.Error().Err(err).Msg("no data directory")
		return 1
	}
	// Before the log file is opened in it: a data directory that is not the user's
	// own is refused, and one they own is tightened to 0700/0600.
	tightened, err := storage.SecureDataDir(dataDir)
	if err != nil {
		log.Error().Err(err).Str("data_dir", dataDir).Msg("cannot use the data directory; run `ferry doctor`")
		return 1
	}
	if lf, err := logfile.Open(storage.LogPath(dataDir), logfile.MaxBytes); err != nil {
		log.Warn().Err(err).Msg("logging to stderr only")
	} else {
		defer lf.Close()
		log = zerolog.New(zerolog.MultiLevelWriter(lf, stderr)).With().Timestamp().Int("pid", os.Getpid()).Logger()
	}

	for _, l := range tightened {
		log.Warn().Str("path", l.Path).Str("was", fmt.Sprintf("%04o", l.Mode)).Str("now", fmt.Sprintf("%04o", l.Want)).
			Msg("tightened a file of the data directory that other users could reach")
	}

	s := &hostStart{origin: origin, dataDir: dataDir, log: log}
	if _, err := origins.CheckExtension(origin, []string{buildinfo.ExtensionID}); err == nil {
		s.background = true
		s.launch = host.NewLauncher(log, s.run)
	} else {
		// Another extension is checked against the settings before any reply.
		s.launch = host.NewLauncher(log, nil)
		if s.run(); !s.ok {
			return 1
		}
	}
	defer s.close()
	in := activityReader{stdin, &s.ctl}

	// A signal ends the host without waiting for the browser, but never with the
	// database left open mid-write.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		log.Info().Str("signal", sig.String()).Msg("exiting on signal")
		s.close()
		os.Exit(0)
	}()

	err = s.launch.Serve(context.Background(), bufio.NewReaderSize(in, 64<<10), stdout)
	if err != nil {
		log.Error().Err(err).Msg("connection broken")
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	log.Info().Msg("browser closed the connection; exiting")
	return 0
}

// hostStart builds the host of one host-mode process.
type hostStart struct {
	origin, dataDir string
	log             zerolog.Logger
	launch          *host.Launcher

	// background: start runs beside the first replies (the pinned extension).
	background bool
	// once runs start, or stops it from running when the host closes first.
	once sync.Once
	ok   bool // start ran and the host is whole

	db  *storage.DB
	h   *host.Host
	ctl atomic.Pointer[control.Server]
	// ctlReady is closed once the control socket listens or could not.
	ctlReady chan struct{}
	closing  sync.Once
}

func (s *hostStart) run() {
	s.once.Do(func() { s.ok = s.start() })
}

// start opens the database, builds the host, applies the settings the process needs
// and hands the host to the launcher. A host that cannot start exits the process, as
// it did before any reply: the browser sees the port close and the options page says
// to run `ferry doctor`.
func (s *hostStart) start() bool {
	log := s.log
	db, err := storage.Open(s.dataDir)
	if err != nil {
		log.Error().Err(err).Msg("cannot open the database; run `ferry doctor`")
		return s.fail()
	}
	h, err := host.New(db, s.dataDir, log)
	if err != nil {
		log.Error().Err(err).Msg("starting host")
		db.Close()
		return s.fail()
	}
	settings := h.Tools.Settings.Snapshot(context.Background()) // the first read of settings
	if lvl, err := zerolog.ParseLevel(settings.String(host.SettingLogLevel)); err == nil {
		zerolog.SetGlobalLevel(lvl) // one host per process: its level is the process's
	}
	allowed, err := origins.AllowedExtensions(settings)
	if err != nil {
		log.Warn().Err(err).Msg("using only the pinned extension ID")
	}
	if _, err := origins.CheckExtension(s.origin, allowed); err != nil {
		log.Error().Str("origin", s.origin).Msg(err.Error())
		h.Close()
		db.Close()
		return s.fail()
	}
	h.Caller = s.origin
	s.db, s.h = db, h

	// The control socket lets `ferry run` and `ferry mcp` reach this host, and
	// through it the browser. Without it the host still serves the browser.
	s.ctlReady = make(chan struct{})
	go func() {
		defer close(s.ctlReady)
		browserName, profile := control.Parent()
		c, err := control.Listen(control.Options{
			DataDir: s.dataDir, Log: log, Handle: control.HostHandler(control.Local{Methods: h.Methods, Tools: h.Tools}),
			Info: control.Info{Version: buildinfo.Version, Origin: s.origin, Browser: browserName, Profile: profile},
		})
		if err != nil {
			log.Warn().Err(err).Msg("no control socket: ferry run and ferry mcp cannot reach this browser")
			return
		}
		s.ctl.Store(c)
		log.Info().Str("socket", c.Info().Socket).Msg("control socket listening")
	}()
	log.Info().Str("version", buildinfo.Version).Str("origin", s.origin).Str("data_dir", s.dataDir).Msg("host started")
	s.launch.Ready(h)
	return true
}

// fail ends a host that could not start. Before the pinned extension's first reply
// it returns false to runHost, which exits 1 having written nothing; once replies
// may have been written it exits the process itself.
func (s *hostStart) fail() bool {
	if s.background {
		os.Exit(1)
	}
	return false
}

// close stops the control socket and writes what the host still holds (queued
// audit rows) before the database closes. It waits for start to end first: a
// migration is never cut short.
func (s *hostStart) close() {
	s.once.Do(func() {}) // waits for a start under way; forbids one not yet begun
	if !s.ok {
		return
	}
	s.closing.Do(func() {
		<-s.ctlReady
		if c := s.ctl.Load(); c != nil {
			c.Close()
		}
		s.h.Close()
		s.db.Close()
	})
}

// activityReader marks the host active in its control-socket description whenever
// the browser sends something, so clients pick the host the person is using.
type activityReader struct {
	r   io.Reader
	ctl *atomic.Pointer[control.Server]
}

func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		if s := a.ctl.Load(); s != nil {
			s.Touch()
		}
	}
	return n, err
}
