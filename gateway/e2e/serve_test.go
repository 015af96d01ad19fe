package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/loopback"
)

// TestServeAddressRule: serve refuses an address beyond loopback without TLS
// (unless --insecure), and serves HTTPS with a certificate.
func TestServeAddressRule(t *testing.T) {
	e := newEnv(t, "sqlite")
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		cmd := exec.Command(ferryBin, "gateway", "serve", "--addr", addr, "--db", e.dsn)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "--tls-cert") || !strings.Contains(string(out), "--insecure") {
			t.Fatalf("serve --addr %s: %v\n%s", addr, err, out)
		}
	}
	// --insecure lets it listen on every interface (on this machine only).
	g := e.serve("--addr", "0.0.0.0:0", "--insecure")
	if g.generation(t) < 1 {
		t.Fatal("no generation")
	}

	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	cmd := exec.Command(ferryBin, "gateway", "serve", "--addr", "127.0.0.1:0", "--db", e.dsn, "--tls-cert", cert)
	if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), "both --tls-cert and --tls-key") {
		t.Fatalf("cert without key: %s", out)
	}
	gs := e.serve("--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(gs.URL, "https://") {
		t.Fatalf("TLS serve at %s", gs.URL)
	}
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{DialContext: loopback.Dial, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(gs.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("https healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return
}

// TestModelsAndMetrics: /v1/models lists what a user may call, in the shape the
// client's SDK expects; /metrics counts requests, tokens and latencies in
// Prometheus' text format.
func TestModelsAndMetrics(t *testing.T) {
	tm := newTeam(t, "sqlite")
	bob := tm.addUser("bob", "--models", "claude")
	tm.gw.waitGeneration(t, 7)
	get := func(tok string, anthropic bool) map[string]any {
		req, _ := http.NewRequest("GET", tm.gw.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if anthropic {
			req.Header.Set("anthropic-version", "2023-06-01")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return v
	}
	oa := get(tm.tok, false)
	if oa["object"] != "list" || len(oa["data"].([]any)) != 2 || oa["data"].([]any)[1].(map[string]any)["id"] != "gpt" {
		t.Errorf("openai models %v", oa)
	}
	an := get(bob, true)
	if data := an["data"].([]any); len(data) != 1 || data[0].(map[string]any)["type"] != "model" || an["has_more"] != false {
		t.Errorf("anthropic models %v", an)
	}

	tm.oa.Add(modeltest.Turn{Text: "x", InputTokens: 7, OutputTokens: 2})
	readAll(t, post(t, tm.gw.URL+"/v1/chat/completions", tm.tok, "openai", chatBody("openai", "gpt", "hi", true, nil)))
	readAll(t, post(t, tm.gw.URL+"/v1/chat/completions", "nope", "openai", chatBody("openai", "gpt", "hi", false, nil)))
	resp, err := http.Get(tm.gw.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`ferry_gateway_requests_total{dialect="openai",model="gpt",upstream="oa",status="200"} 1`,
		`ferry_gateway_requests_total{dialect="openai",model="",upstream="",status="401"} 1`,
		`ferry_gateway_tokens_total{model="gpt",kind="input"} 7`,
		`ferry_gateway_tokens_total{model="gpt",kind="output"} 2`,
		`ferry_gateway_request_duration_seconds_bucket{model="gpt",status="200",le="+Inf"} 1`,
		`ferry_gateway_time_to_first_byte_seconds_count{model="gpt"} 1`,
		"# TYPE ferry_gateway_upstream_errors_total counter",
		"ferry_gateway_active_requests 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Every line is a comment or a sample: name, optional labels, a number.
	sample := regexp.MustCompile(`^[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? [-+0-9.eInf]+$`)
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		if !strings.HasPrefix(l, "# ") && !sample.MatchString(l) {
			t.Errorf("not exposition format: %q", l)
		}
	}
}

// TestCommandLine: the management commands as an admin uses them, while serve
// runs; tokens are shown once and rotation ends the old one; keys are never shown.
func TestCommandLine(t *testing.T) {
	tm := newTeam(t, "sqlite")
	out := tm.must("", "user", "list")
	if !strings.Contains(out, "alice") || !strings.Contains(out, "web") {
		t.Errorf("user list:\n%s", out)
	}
	var users []map[string]any
	json.Unmarshal([]byte(tm.must("", "user", "list", "--json")), &users)
	if len(users) != 1 || users[0]["name"] != "alice" {
		t.Errorf("user list --json: %v", users)
	}
	for k := range users[0] {
		if strings.HasPrefix(k, "token") || strings.Contains(k, "hash") || strings.Contains(k, "salt") {
			t.Errorf("user list shows %s", k)
		}
	}
	if _, errs, code := tm.ferry("", "user", "add", "alice"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Errorf("second alice: %d %s", code, errs)
	}
	up := tm.must("", "upstream", "list", "--json") + tm.must("", "upstream", "list")
	if strings.Contains(up, oaKey) || strings.Contains(up, anKey) || !strings.Contains(up, `"has_key": true`) {
		t.Errorf("upstream list: %s", up)
	}
	if _, errs, code := tm.ferry("", "upstream", "remove", "oa"); code != 1 || !strings.Contains(errs, "gpt") {
		t.Errorf("removing a routed upstream: %d %s", code, errs)
	}
	if _, errs, code := tm.ferry("", "route", "add", "mixed", "--upstream", "oa", "--fallback", "an"); code != 1 || !strings.Contains(errs, "one wire format") {
		t.Errorf("mixed route: %d %s", code, errs)
	}
	if _, errs, code := tm.ferry("", "config", "set", "store_content", "maybe"); code != 2 || !strings.Contains(errs, "true or false") {
		t.Errorf("bad setting: %d %s", code, errs)
	}

	// Rotation: the old token stops at once in serve (within its reload), the new works.
	g := tm.gw.generation(t)
	newTok := strings.TrimSpace(tm.must("", "user", "rotate", "alice"))
	tm.gw.waitGeneration(t, g+1)
	tm.oa.Add(modeltest.Text("new token works"))
	if resp := post(t, tm.gw.URL+"/v1/chat/completions", tm.tok, "openai", chatBody("openai", "gpt", "hi", false, nil)); resp.StatusCode != 401 {
		t.Errorf("old token after rotate: %d", resp.StatusCode)
	}
	if resp := post(t, tm.gw.URL+"/v1/chat/completions", newTok, "openai", chatBody("openai", "gpt", "hi", false, nil)); resp.StatusCode != 200 {
		t.Errorf("new token: %d %s", resp.StatusCode, readAll(t, resp))
	}

	// Content is kept only when the setting says so.
	tm.must("", "config", "set", "store_content", "true")
	tm.gw.waitGeneration(t, g+2)
	tm.oa.Add(modeltest.Text("kept answer"))
	readAll(t, post(t, tm.gw.URL+"/v1/chat/completions", newTok, "openai", chatBody("openai", "gpt", "kept prompt", false, nil)))
	rows := tm.requests(3)
	st, err := store.Open(context.Background(), tm.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if c, err := st.RequestContent(context.Background(), rows[0].ID); err != nil || !strings.Contains(c.Request, "kept prompt") || !strings.Contains(c.Response, "kept answer") {
		t.Errorf("stored content %+v %v", c, err)
	}
	if _, err := st.RequestContent(context.Background(), rows[1].ID); err == nil {
		t.Error("content was kept while store_content was off")
	}

	csv := tm.must("", "usage", "--csv")
	if !strings.HasPrefix(csv, "day,user,team,model,requests,errors,input_tokens,output_tokens,cached_tokens,estimated,cost_micros\n") || !strings.Contains(csv, ",alice,web,gpt,") {
		t.Errorf("usage --csv:\n%s", csv)
	}
	audit := tm.must("", "audit")
	for _, want := range []string{"user.rotate alice", "setting.set store_content", "upstream.add oa", "request"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %q:\n%s", want, audit)
		}
	}
	if strings.Contains(audit, oaKey) || strings.Contains(tm.must("", "audit", "--json"), anKey) {
		t.Error("the audit shows a key")
	}
	tm.must("", "user", "remove", "alice")
	if out := tm.must("", "user", "list"); strings.Contains(out, "alice") {
		t.Errorf("removed user listed: %s", out)
	}
	if _, errs, code := tm.ferry("", "user", "disable", "nobody"); code != 1 || !strings.Contains(errs, `no user "nobody"`) {
		t.Errorf("disable unknown: %d %s", code, errs)
	}
}
