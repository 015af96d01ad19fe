package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

// A Launcher answers host.hello and host.ping before its host is ready, holds every
// other request until Ready, and then answers it from the host's table.
func TestLauncherAnswersFirstAndHoldsTheRest(t *testing.T) {
	l := NewLauncher(zerolog.Nop(), nil)
	hostIn, extOut := io.Pipe()
	extIn, hostOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- l.Serve(context.Background(), hostIn, hostOut); hostOut.Close() }()
	ext := protocol.NewConn(extIn, extOut, func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		return nil, protocol.Errorf(protocol.CodeMethodNotFound, "no %s", method)
	})
	go ext.Serve(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var hello map[string]any
	if err := ext.Call(ctx, "host.hello", map[string]int{"protocol": 1}, &hello); err != nil || hello["name"] != "ferry" {
		t.Fatalf("hello before the host is ready: %v %v", hello, err)
	}
	var wrong *protocol.Error
	if err := ext.Call(ctx, "host.hello", map[string]int{"protocol": 99}, nil); !errors.As(err, &wrong) || wrong.Code != protocol.CodeProtocolMismatch {
		t.Fatalf("a mismatched hello before the host is ready: %v", err)
	}
	info := make(chan error, 1)
	var got map[string]any
	go func() { info <- ext.Call(ctx, "host.info", nil, &got) }()
	var ping map[string]any
	if err := ext.Call(ctx, "host.ping", map[string]any{"payload": []int{1, 2}}, &ping); err != nil || len(ping["payload"].([]any)) != 2 {
		t.Fatalf("ping before the host is ready: %v %v", ping, err)
	}
	select {
	case err := <-info:
		t.Fatalf("host.info answered before the host was ready: %v %v", got, err)
	default:
	}

	h := newTestHost(t)
	l.Ready(h)
	if err := <-info; err != nil || got["database_path"] != h.DB.Path() {
		t.Fatalf("host.info once ready: %v %v", got, err)
	}
	// Once ready the extension's connection is the host's: the line to the person works.
	if h.Conn() == nil {
		t.Fatal("the host has no connection once ready")
	}
	extOut.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if h.Conn() != nil {
		t.Fatal("the connection stays attached after it closed")
	}
}
