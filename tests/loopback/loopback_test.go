package loopback

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestClientReachesLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "here") }))
	defer srv.Close()
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), strings.Replace(srv.URL, "127.0.0.1", "0.0.0.0", 1)} {
		resp, err := Client().Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "here" {
			t.Errorf("GET %s = %q", u, b)
		}
	}
}

// A public address is refused before any connection is attempted: the dialer of
// the standard library would be reached only through the loopback check, so the
// refusal comes back at once (no timeout) and names the rule.
func TestClientRefusesAddressesOffTheMachine(t *testing.T) {
	for _, u := range []string{"http://93.184.216.34/", "https://[2606:2800:220:1::248]/", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3:8080/", "http://[::ffff:93.184.216.34]/"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		t0 := time.Now()
		_, err := Client().Do(req)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "tests dial loopback only") {
			t.Errorf("GET %s: err = %v, want the loopback refusal", u, err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("GET %s took %v: the refusal should come before any dial", u, d)
		}
	}
}

// A loopback page that redirects off the machine does not take the client there.
func TestClientRefusesRedirectOffTheMachine(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://93.184.216.34/elsewhere", http.StatusFound))
	defer srv.Close()
	_, err := Client().Get(srv.URL)
	if err == nil || !strings.Contains(err.Error(), "tests dial loopback only") {
		t.Errorf("redirect off the machine: err = %v, want the loopback refusal", err)
	}
}

func TestPinDefault(t *testing.T) {
	old := http.DefaultTransport
	defer func() { http.DefaultTransport = old }()
	PinDefault()
	_, err := http.Get("http://93.184.216.34/")
	if err == nil || !strings.Contains(err.Error(), "tests dial loopback only") {
		t.Errorf("http.Get after PinDefault: err = %v, want the loopback refusal", err)
	}
}

// A name other than localhost is refused unresolved: its DNS query would itself
// leave the machine.
func TestDialResolvesNoName(t *testing.T) {
	for _, addr := range []string{"example.com:80", "localhost.example.com:80", "127.0.0.1.nip.io:80"} {
		_, err := Dial(context.Background(), "tcp", addr)
		if err == nil || !strings.Contains(err.Error(), "resolve no name") {
			t.Errorf("Dial %s: %v, want the refusal to resolve", addr, err)
		}
	}
}
