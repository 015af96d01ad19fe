package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
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
func runHost(origin string, stdin io.Reader, stdout, stderr io.Writer) int {
	// stdout belongs to the protocol; a stray print anywhere would corrupt a frame, so
	// the process's own os.Stdout now points at stderr.
	os.Stdout = os.Stderr

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

	db, err := storage.Open(dataDir)
	if err != nil {
		log.Error().Err(err).Msg("cannot open the database; run `ferry doctor`")
		return 1
	}
	defer db.Close()

	h, err := host.New(db, dataDir, log)
	if err != nil {
		log.Error().Err(err).Msg("starting host")
		return 1
	}
	// Deferred after db.Close, so it runs first: queued audit rows reach the database.
	defer h.Close()
	settings := h.Tools.Settings.Snapshot(context.Background()) // the first read of settings
	if lvl, err := zerolog.ParseLevel(settings.String(host.SettingLogLevel)); err == nil {
		zerolog.SetGlobalLevel(lvl) // one host per process: its level is the process's
	}
	allowed, err := origins.AllowedExtensions(settings)
	if err != nil {
		log.Warn().Err(err).Msg("using only the pinned extension ID")
	}
	if _, err := origins.CheckExtension(origin, allowed); err != nil {
		log.Error().Str("origin", origin).Msg(err.Error())
		return 1
	}
	h.Caller = origin

	// The control socket lets `ferry run` and `ferry mcp` reach this host, and
	// through it the browser. Without it the host still serves the browser. It is
	// set up beside the first replies, not before them: the browser is waiting.
	var ctl atomic.Pointer[control.Server]
	ctlReady := make(chan struct{})
	go func() {
		defer close(ctlReady)
		browserName, profile := control.Parent()
		s, err := control.Listen(control.Options{
			DataDir: dataDir, Log: log, Handle: control.HostHandler(control.Local{Methods: h.Methods, Tools: h.Tools}),
			Info: control.Info{Version: buildinfo.Version, Origin: origin, Browser: browserName, Profile: profile},
		})
		if err != nil {
			log.Warn().Err(err).Msg("no control socket: ferry run and ferry mcp cannot reach this browser")
			return
		}
		ctl.Store(s)
		log.Info().Str("socket", s.Info().Socket).Msg("control socket listening")
	}()
	closeControl := func() {
		<-ctlReady
		if s := ctl.Load(); s != nil {
			s.Close()
		}
	}
	defer closeControl()
	in := activityReader{stdin, &ctl}

	// A signal ends the host without waiting for the browser, but never with the
	// database left open mid-write.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		log.Info().Str("signal", s.String()).Msg("exiting on signal")
		closeControl()
		h.Close()
		db.Close()
		os.Exit(0)
	}()

	log.Info().Str("version", buildinfo.Version).Str("origin", origin).Str("data_dir", dataDir).Msg("host started")
	err = h.Serve(context.Background(), bufio.NewReaderSize(in, 64<<10), stdout)
	if err != nil {
		log.Error().Err(err).Msg("connection broken")
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	log.Info().Msg("browser closed the connection; exiting")
	return 0
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
