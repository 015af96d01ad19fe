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
	return DialAs(ctx, dataDir, pid, "")
}

// DialAs is Dial for a client that names itself in control.hello ("ferry mcp"): the
// host records calls with that label; the scope is an outside agent's either way.
func DialAs(ctx context.Context, dataDir string, pid int, name string) (*Client, error) {
	info, err := Pick(dataDir, pid)
	if err != nil {
		return nil, err
	}
	return DialInfoAs(ctx, dataDir, info, name)
}

// DialInfo connects to the host info describes and presents its token.
func DialInfo(ctx context.Context, dataDir string, info Info) (*Client, error) {
	return DialInfoAs(ctx, dataDir, info, "")
}

// DialInfoAs is DialInfo for a client that names itself.
func DialInfoAs(ctx context.Context, dataDir string, info Info, name string) (*Client, error) {
	_, tokenPath, _ := paths(dataDir, info.PID)
	tok, err := os.ReadFile(tokenPath)
	if err != nil {
		return nil, fmt.Errorf("reading the control token: %w", err)
	}
	nc, err := dial(info.Socket, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connecting to the browser host (pid %d): %w", info.PID, err)
	}
	hello, err := clientHello(ctx, nc, strings.TrimSpace(string(tok)), name)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("the browser host (pid %d) did not let this client in: %w", info.PID, err)
	}
	c := &Client{Info: hello, nc: nc, done: make(chan struct{})}
	c.conn = protocol.NewConn(nc, nc, c.handle, protocol.WithOutboundFrameLimit(protocol.MaxInboundFrame))
	go func() {
		c.conn.Serve(context.Background())
		nc.Close()
		close(c.done)
	}()
	return c, nil
}

// clientHello is the client's half of the handshake, in plain frames like the
// server's: the host answers it before either side speaks full JSON-RPC, and a host
// that turns the client away (busy, wrong token) says why in that one answer, which
// may come before the hello is even read.
func clientHello(ctx context.Context, nc net.Conn, token, name string) (Info, error) {
	deadline := time.Now().Add(HelloTimeout + 5*time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	nc.SetDeadline(deadline)
	defer nc.SetDeadline(time.Time{})
	hp := map[string]string{"token": token}
	if name != "" {
		hp["client"] = name // a label for the audit rows; the scope is an outside agent's anyway
	}
	params, _ := json.Marshal(hp)
	b, _ := json.Marshal(&protocol.Message{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: HelloMethod, Params: params})
	werr := protocol.WriteFrame(nc, b)
	f, err := protocol.ReadFrame(nc, protocol.MaxInboundFrame)
	if err != nil {
		if werr != nil {
			return Info{}, werr
		}
		return Info{}, err
	}
	var m protocol.Message
	if err := json.Unmarshal(f, &m); err != nil {
		return Info{}, fmt.Errorf("its answer to %s is not JSON-RPC: %w", HelloMethod, err)
	}
	if m.Error != nil {
		return Info{}, m.Error
	}
	var info Info
	if err := json.Unmarshal(m.Result, &info); err != nil {
		return Info{}, fmt.Errorf("its answer to %s: %w", HelloMethod, err)
	}
	return info, nil
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
