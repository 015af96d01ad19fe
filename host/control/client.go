package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/protocol"
)

// Client is an authenticated connection to a live host.
type Client struct {
	Info Info // the host's description (as control.hello returned it)

	nc   net.Conn
	conn *protocol.Conn
	done chan struct{}

	mu     sync.Mutex
	notify func(method string, params json.RawMessage)
}

// Dial connects to a host of dataDir: the one with pid, or (pid 0) the most recently
// active. ErrNoHost when none is running.
func Dial(ctx context.Context, dataDir string, pid int) (*Client, error) {
	info, err := Pick(dataDir, pid)
	if err != nil {
		return nil, err
	}
	return DialInfo(ctx, dataDir, info)
}

// DialInfo connects to the host info describes and presents its token.
func DialInfo(ctx context.Context, dataDir string, info Info) (*Client, error) {
	_, tokenPath, _ := paths(dataDir, info.PID)
	tok, err := os.ReadFile(tokenPath)
	if err != nil {
		return nil, fmt.Errorf("reading the control token: %w", err)
	}
	nc, err := dial(info.Socket, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connecting to the browser host (pid %d): %w", info.PID, err)
	}
	c := &Client{Info: info, nc: nc, done: make(chan struct{})}
	c.conn = protocol.NewConn(nc, nc, c.handle, protocol.WithOutboundFrameLimit(protocol.MaxInboundFrame))
	go func() {
		c.conn.Serve(context.Background())
		nc.Close()
		close(c.done)
	}()
	var hello Info
	if err := c.conn.Call(ctx, HelloMethod, map[string]string{"token": strings.TrimSpace(string(tok))}, &hello); err != nil {
		c.Close()
		return nil, fmt.Errorf("the browser host (pid %d) refused the control token: %w", info.PID, err)
	}
	c.Info = hello
	return c, nil
}

// OnNotify sets the function that hears the host's notifications (chat.event, …).
func (c *Client) OnNotify(f func(method string, params json.RawMessage)) {
	c.mu.Lock()
	c.notify = f
	c.mu.Unlock()
}

func (c *Client) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	f := c.notify
	c.mu.Unlock()
	if f != nil {
		f(method, params)
	}
	return nil, protocol.Errorf(protocol.CodeMethodNotFound, "method not found: %s", method)
}

// Call sends one request to the host.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.conn.Call(ctx, method, params, result)
}

// Notify sends one notification to the host.
func (c *Client) Notify(method string, params any) error { return c.conn.Notify(method, params) }

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close hangs up.
func (c *Client) Close() error {
	err := c.nc.Close()
	<-c.done
	return err
}
