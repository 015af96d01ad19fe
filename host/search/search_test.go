package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// store is an in-memory stand-in for *storage.DB.
type store struct {
	settings map[string]string
	secrets  map[string]string
	err      error
}

func (s *store) Snapshot(context.Context) *config.Snapshot {
	if s.err != nil {
		return &config.Snapshot{Err: s.err}
	}
	return config.Of(s.settings)
}

func (s *store) Secret(_ context.Context, key string) ([]byte, bool, error) {
	if s.err != nil {
		return nil, false, s.err
	}
	v, ok := s.secrets[key]
	return []byte(v), ok, nil
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// engineServer serves h on loopback and returns a store pointing engine's endpoint at it.
func engineServer(t *testing.T, engine, path string, h http.Handler) (*httptest.Server, *store) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &store{
		settings: map[string]string{SettingEngine: engine, EndpointSetting(engine): srv.URL + path},
		secrets:  map[string]string{},
	}
}

func newTool(t *testing.T, st *store, client *http.Client) tools.Tool {
	t.Helper()
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	ts := Tools(Deps{Settings: st, Secrets: st, Client: client})
	if len(ts) != 1 {
		t.Fatalf("Tools returned %d tools", len(ts))
	}
	return ts[0]
}

// call runs the tool as the pipeline would: availability, then Run.
func call(t *testing.T, tool tools.Tool, args string) ([]Result, error) {
	t.Helper()
	ctx := context.Background()
	c := &tools.Call{Tool: tool.Name, Arguments: json.RawMessage(args)}
	if ok, reason := tool.Available(ctx, c); !ok {
		return nil, &tools.Failure{Code: tools.CodeActionUnavailable, Reason: reason}
	}
	v, err := tool.Run(ctx, c)
	if err != nil {
		return nil, err
	}
	rs, ok := v.([]Result)
	if !ok {
		t.Fatalf("Run returned %T", v)
	}
	return rs, nil
}

func wantFailure(t *testing.T, err error, code tools.Code, substrings ...string) {
	t.Helper()
	var f *tools.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error = %v (%T), want a *tools.Failure with code %s", err, err, code)
	}
	if f.Code != code {
		t.Errorf("code = %s, want %s (reason %q)", f.Code, code, f.Reason)
	}
	for _, s := range substrings {
		if !strings.Contains(f.Reason, s) {
			t.Errorf("reason %q does not mention %q", f.Reason, s)
		}
	}
}

func wantEmptyJSON(t *testing.T, rs []Result) {
	t.Helper()
	b, err := json.Marshal(rs)
	if err != nil || string(b) != "[]" {
		t.Fatalf("results marshal to %s (%v), want []", b, err)
	}
}

func TestToolDefinition(t *testing.T) {
	tool := newTool(t, &store{}, nil)
	if tool.Name != "web_search" || tool.Kind != tools.KindRead || tool.Source != tools.SourceBuiltin || tool.Run == nil {
		t.Fatalf("tool = %+v", tool)
	}
	var schema struct {
		Type       string
		Required   []string
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(tool.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || !reflect.DeepEqual(schema.Required, []string{"query"}) {
		t.Errorf("schema = %+v", schema)
	}
	mr := schema.Properties["max_results"]
	// Above 10 is capped, not refused (Search brings it into range, and the tool's
	// description says so): the schema sets no maximum.
	if mr["type"] != "integer" || mr["minimum"] != 1.0 || mr["maximum"] != nil || mr["default"] != 5.0 {
		t.Errorf("max_results = %v", mr)
	}
	if q := schema.Properties["query"]; q["type"] != "string" || q["minLength"] != 1.0 {
		t.Errorf("query = %v", q)
	}
}

func TestSettingsRegistered(t *testing.T) {
	want := map[string]string{
		SettingEngine:                     "duckduckgo",
		EndpointSetting(EngineDuckDuckGo): "https://html.duckduckgo.com/html/",
		EndpointSetting(EngineBing):       "https://api.bing.microsoft.com/v7.0/search",
		EndpointSetting(EngineBaidu):      "https://www.baidu.com/s",
		EndpointSetting(EngineGoogle):     "https://www.googleapis.com/customsearch/v1",
		SettingGoogleCX:                   "",
	}
	for key, def := range want {
		s, err := config.Lookup(key)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		if s.Default != def {
			t.Errorf("%s default = %q, want %q", key, s.Default, def)
		}
	}
	engine, _ := config.Lookup(SettingEngine)
	if engine.Check("yahoo") == nil || engine.Check("baidu") != nil {
		t.Error("search.engine accepts the wrong values")
	}
	ep, _ := config.Lookup(EndpointSetting(EngineBaidu))
	if ep.Check("ftp://x/") == nil || ep.Check("/s") == nil || ep.Check("http://127.0.0.1:8080/s") != nil {
		t.Error("endpoint validation is wrong")
	}
}

func TestDuckDuckGo(t *testing.T) {
	var mu sync.Mutex
	var gotQ, gotBody, gotMethod string
	srv, st := engineServer(t, EngineDuckDuckGo, "/html/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotMethod, gotBody = r.Method, string(b)
		r.Body = io.NopCloser(strings.NewReader(gotBody))
		_ = r.ParseForm()
		gotQ = r.PostForm.Get("q")
		mu.Unlock()
		if r.URL.Path != "/html/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		w.Write(fixture(t, "duckduckgo/results.html"))
	}))
	_ = srv
	tool := newTool(t, st, nil)

	rs, err := call(t, tool, `{"query": "golang 泛型"}`)
	if err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPost || gotQ != "golang 泛型" || !strings.Contains(gotBody, "q=golang+%E6%B3%9B%E5%9E%8B") {
		t.Errorf("request: %s body %q (q %q)", gotMethod, gotBody, gotQ)
	}
	if len(rs) != DefaultMaxResults {
		t.Fatalf("%d results by default, want %d: %+v", len(rs), DefaultMaxResults, rs)
	}
	want := []Result{
		{
			Title:   "Tutorial: Getting started with generics - The Go Programming Language",
			URL:     "https://go.dev/doc/tutorial/generics",
			Snippet: "This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types provided by calling code.",
		},
		{
			Title:   "An Introduction To Generics - The Go Programming Language",
			URL:     "https://go.dev/blog/intro-generics",
			Snippet: "The Go 1.18 release adds support for generics. Generics are the biggest change we've made to Go since the first open source release. In this article we'll introduce the new language features.",
		},
		{
			Title:   "go - How to use a type parameter in an interface method? - Stack Overflow",
			URL:     "https://stackoverflow.com/questions/71132124/how-to-use-a-type-parameter-in-an-interface-method?noredirect=1&lq=1",
			Snippet: "Methods cannot have type parameters: interface { Get[T any]() T } is invalid & won't compile <yet>.",
		},
	}
	if !reflect.DeepEqual(rs[:3], want) {
		t.Errorf("first results:\n got %+v\nwant %+v", rs[:3], want)
	}
	for _, r := range rs {
		if strings.Contains(r.URL, "duckduckgo.com") || strings.Contains(r.Title, "Enroll") {
			t.Errorf("ad or redirect leaked: %+v", r)
		}
	}

	rs, err = call(t, tool, `{"query": "golang generics", "max_results": 10}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 7 {
		t.Fatalf("%d results with max_results 10, want the page's 7 organic ones", len(rs))
	}
	if rs[5].URL != "https://zh.wikipedia.org/wiki/%E6%B3%9B%E5%9E%8B%E7%BC%96%E7%A8%8B" || rs[5].Title != "泛型编程 - 维基百科，自由的百科全书" {
		t.Errorf("Chinese result = %+v", rs[5])
	}

	rs, err = call(t, tool, `{"query": "golang generics", "max_results": 2}`)
	if err != nil || len(rs) != 2 {
		t.Fatalf("max_results 2: %d results, %v", len(rs), err)
	}
	if rs, err = call(t, tool, `{"query": "golang generics", "max_results": 50}`); err != nil || len(rs) != 7 {
		t.Fatalf("max_results 50 (capped at 10): %d results, %v", len(rs), err)
	}
}

func TestDuckDuckGoPages(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		page    string
		code    tools.Code // "" means success with no results
		reasons []string
	}{
		{"no results", 200, "duckduckgo/noresults.html", "", nil},
		{"anomaly page", 200, "duckduckgo/anomaly.html", tools.CodeRateLimited, []string{"DuckDuckGo", "bot", "Wait", "ferry config set search.engine baidu"}},
		{"anomaly with 202", 202, "duckduckgo/anomaly.html", tools.CodeRateLimited, []string{"DuckDuckGo", "ferry config set search.engine"}},
		{"429", 429, "", tools.CodeRateLimited, []string{"DuckDuckGo", "429", "ferry config set search.engine"}},
		{"403", 403, "", tools.CodeRateLimited, []string{"DuckDuckGo", "403"}},
		{"500", 500, "", tools.CodeHandlerError, []string{"DuckDuckGo", "500"}},
		{"not a result page", 200, "", tools.CodeHandlerError, []string{"DuckDuckGo", "layout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, st := engineServer(t, EngineDuckDuckGo, "/html/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				if tc.page != "" {
					w.Write(fixture(t, tc.page))
				} else {
					fmt.Fprint(w, "<html><body><h1>Something else</h1>\x00\xff<div class=</body>")
				}
			}))
			rs, err := call(t, newTool(t, st, nil), `{"query": "golang"}`)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				wantEmptyJSON(t, rs)
				return
			}
			wantFailure(t, err, tc.code, tc.reasons...)
		})
	}
}

// baiduServer serves the result page at /s and Baidu's /link redirects.
type baiduServer struct {
	srv      *httptest.Server
	st       *store
	query    chan string // raw query of each /s request
	resolved sync.Map    // token → times asked
	landed   atomic.Int32
}

func newBaiduServer(t *testing.T, page func(w http.ResponseWriter, r *http.Request)) *baiduServer {
	b := &baiduServer{query: make(chan string, 10)}
	mux := http.NewServeMux()
	mux.HandleFunc("/s", func(w http.ResponseWriter, r *http.Request) {
		b.query <- r.URL.RawQuery
		page(w, r)
	})
	mux.HandleFunc("/link", func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("url")
		n, _ := b.resolved.LoadOrStore(token, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		switch token {
		case "redirect302Token_Ab3dE":
			// The real answer, a 302 whose target must be read, not visited: here it
			// points back at the server so a visit would be counted.
			w.Header().Set("Location", b.srv.URL+"/landed/zhihu-p-512345678")
			w.WriteHeader(http.StatusFound)
		case "redirectMetaRefresh_Q9w8":
			fmt.Fprint(w, `<html><head><meta content="always" name="referrer"><script>try{if(window.opener&&window.opener.bds&&window.opener.bds.pdc&&window.opener.bds.pdc.sendLinkLoaded){window.opener.bds.pdc.sendLinkLoaded(0)}}catch(e){};window.location.replace("https://juejin.cn/post/7123456789012345678")</script><noscript><META http-equiv="refresh" content="0;URL='https://juejin.cn/post/7123456789012345678'"></noscript></head></html>`)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("/landed/", func(w http.ResponseWriter, r *http.Request) { b.landed.Add(1) })
	mux.HandleFunc("/static/captcha/tuxing.html", func(w http.ResponseWriter, r *http.Request) {
		w.Write(fixture(t, "baidu/captcha.html"))
	})
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	b.st = &store{settings: map[string]string{SettingEngine: EngineBaidu, EndpointSetting(EngineBaidu): b.srv.URL + "/s"}}
	return b
}

func (b *baiduServer) asked(token string) int32 {
	n, ok := b.resolved.Load(token)
	if !ok {
		return 0
	}
	return n.(*atomic.Int32).Load()
}

func TestBaidu(t *testing.T) {
	b := newBaiduServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.Write(fixture(t, "baidu/results.html"))
	})
	tool := newTool(t, b.st, nil)

	rs, err := call(t, tool, `{"query": "golang 泛型", "max_results": 10}`)
	if err != nil {
		t.Fatal(err)
	}
	raw := <-b.query
	if !strings.Contains(raw, "wd=golang+%E6%B3%9B%E5%9E%8B") || !strings.Contains(raw, "ie=utf-8") {
		t.Errorf("query string %q", raw)
	}
	want := []Result{
		{"Tutorial: Getting started with generics - The Go Programming Language", "https://go.dev/doc/tutorial/generics",
			"This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types..."},
		{"Go 语言泛型 | 菜鸟教程", "https://www.runoob.com/go/go-generics.html",
			"2023年3月14日 Go 1.18 版本引入了泛型（Generics）， 允许在函数和类型中使用类型参数……"},
		{"深入理解 Golang 泛型：类型参数与约束 - 知乎", b.srv.URL + "/landed/zhihu-p-512345678",
			"2022年8月9日 - 本文从类型参数、类型集合与约束三个方面 讲解 Go 泛型的设计&实现。"},
		{"泛型_百度百科", "https://baike.baidu.com/item/%E6%B3%9B%E5%9E%8B/4475207",
			"泛型是程序设计语言的一种特性。允许程序员在强类型程序设计语言中编写代码时定义一些可变部分。"},
		{"Go 泛型最佳实践 - 掘金", "https://juejin.cn/post/7123456789012345678", "总结了在实际项目中使用 Go 泛型的经验……"},
		// Its redirect fails: the Baidu link stays, which still leads to the page.
		{"Golang 泛型性能测试 - 博客园", "http://www.baidu.com/link?url=redirectBroken_500x", "对比了 interface{} 与泛型实现的基准测试结果。"},
		{"Go 语言泛型类型推断研究_百度学术", "http://xueshu.baidu.com/usercenter/paper/show?paperid=1a2b3c4d5e6f", "讨论了类型参数的推断算法……"},
		{"spec: add generic programming using type parameters · Issue #43651 · golang/go", "https://github.com/golang/go/issues/43651", "We propose adding support for type parameters to Go."},
		{"slices package - slices - Go Packages", "https://pkg.go.dev/slices", "Package slices defines various functions useful with slices of any type."},
		{"maps package - maps - Go Packages", "https://pkg.go.dev/maps", "Package maps defines various functions useful with maps of any type."},
	}
	if len(rs) != len(want) {
		t.Fatalf("%d results, want %d:\n%+v", len(rs), len(want), rs)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, rs[i], want[i])
		}
	}
	if n := b.landed.Load(); n != 0 {
		t.Errorf("a redirect was followed to its target %d times", n)
	}
	for _, tok := range []string{"redirect302Token_Ab3dE", "redirectMetaRefresh_Q9w8", "redirectBroken_500x"} {
		if n := b.asked(tok); n != 1 {
			t.Errorf("link %s asked %d times, want 1", tok, n)
		}
	}
	// Hits whose real URL was on the page cost no request.
	for _, tok := range []string{"mu1AaBbCcDdEeFfGgHhIiJjKkLlMmNnOoPpQqRrSsTtUuVvWwXxYyZz0", "xueshuLinkToken_77", "mu9Token"} {
		if n := b.asked(tok); n != 0 {
			t.Errorf("link %s resolved although the page carried its URL", tok)
		}
	}

	// Only the hits returned are resolved.
	b.resolved.Clear()
	rs, err = call(t, tool, `{"query": "golang"}`)
	<-b.query
	if err != nil || len(rs) != DefaultMaxResults {
		t.Fatalf("default: %d results, %v", len(rs), err)
	}
	rs, err = call(t, tool, `{"query": "golang", "max_results": 2}`)
	<-b.query
	if err != nil || len(rs) != 2 {
		t.Fatalf("max_results 2: %d results, %v", len(rs), err)
	}
	if n := b.asked("redirectBroken_500x"); n != 0 {
		t.Errorf("a link beyond max_results was resolved")
	}
}

func TestBaiduBlocks(t *testing.T) {
	cases := []struct {
		name    string
		page    func(b *baiduServer) http.HandlerFunc
		code    tools.Code
		reasons []string
	}{
		{"captcha redirect", func(b *baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/static/captcha/tuxing.html?&logid=8209&ak=1e3f&backurl=https%3A%2F%2Fwww.baidu.com%2Fs%3Fwd%3Dgolang", http.StatusFound)
			}
		}, tools.CodeRateLimited, []string{"Baidu", "安全验证", "Wait", "ferry config set search.engine duckduckgo"}},
		{"captcha page", func(*baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.Write(fixture(t, "baidu/captcha.html")) }
		}, tools.CodeRateLimited, []string{"Baidu", "安全验证"}},
		{"429", func(*baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }
		}, tools.CodeRateLimited, []string{"Baidu", "429"}},
		{"403", func(*baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }
		}, tools.CodeRateLimited, []string{"Baidu", "403"}},
		{"502", func(*baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }
		}, tools.CodeHandlerError, []string{"Baidu", "502"}},
		{"garbage", func(*baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("\x1f\x8b\x08\x00garbage<<<>>>")) }
		}, tools.CodeHandlerError, []string{"Baidu", "layout"}},
		{"no results", func(*baiduServer) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.Write(fixture(t, "baidu/noresults.html")) }
		}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b *baiduServer
			b = newBaiduServer(t, func(w http.ResponseWriter, r *http.Request) { tc.page(b)(w, r) })
			rs, err := call(t, newTool(t, b.st, nil), `{"query": "golang"}`)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				wantEmptyJSON(t, rs)
				return
			}
			wantFailure(t, err, tc.code, tc.reasons...)
		})
	}
}

func TestBing(t *testing.T) {
	type got struct{ key, q, count string }
	reqs := make(chan got, 10)
	_, st := engineServer(t, EngineBing, "/v7.0/search", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs <- got{r.Header.Get("Ocp-Apim-Subscription-Key"), r.URL.Query().Get("q"), r.URL.Query().Get("count")}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(fixture(t, "bing/results.json"))
	}))
	tool := newTool(t, st, nil)

	_, err := call(t, tool, `{"query": "golang generics"}`)
	wantFailure(t, err, tools.CodeActionUnavailable, "Bing", "ferry secret set search.bing.key", "ferry config set search.engine duckduckgo")
	if len(reqs) != 0 {
		t.Fatal("Bing was asked without a key")
	}

	st.secrets[SecretBingKey] = "bing-key-123\n"
	rs, err := call(t, tool, `{"query": "golang 泛型", "max_results": 3}`)
	if err != nil {
		t.Fatal(err)
	}
	if g := <-reqs; g != (got{"bing-key-123", "golang 泛型", "3"}) {
		t.Errorf("request = %+v", g)
	}
	want := []Result{
		{"Tutorial: Getting started with generics - The Go Programming Language", "https://go.dev/doc/tutorial/generics",
			"This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types provided by calling code."},
		{"An Introduction To Generics - The Go Programming Language", "https://go.dev/blog/intro-generics",
			"The Go 1.18 release adds support for generics. Generics are the biggest change we've made to Go since the first open source release."},
		{"Go by Example: Generics", "https://gobyexample.com/generics", "Starting with version 1.18, Go has added support for generics, also known as type parameters."},
	}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("results:\n got %+v\nwant %+v", rs, want)
	}
}

func TestBingErrors(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		code    tools.Code
		reasons []string
	}{
		{"invalid key", 401, "bing/error_401.json", tools.CodeActionUnavailable, []string{"Bing", "Subscription key is not recognized", "ferry secret set search.bing.key"}},
		{"gateway key", 401, "bing/error_gateway_401.json", tools.CodeActionUnavailable, []string{"Bing", "Access denied", "ferry secret set search.bing.key"}},
		{"call volume", 403, "bing/error_403_volume.json", tools.CodeRateLimited, []string{"Bing", "call volume", "ferry config set search.engine duckduckgo"}},
		{"429", 429, "", tools.CodeRateLimited, []string{"Bing", "429"}},
		{"500", 500, "", tools.CodeHandlerError, []string{"Bing", "500"}},
		{"not JSON", 200, "", tools.CodeHandlerError, []string{"Bing", "JSON"}},
		{"empty", 200, "bing/empty.json", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, st := engineServer(t, EngineBing, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				if tc.body != "" {
					w.Write(fixture(t, tc.body))
				} else {
					fmt.Fprint(w, "<html>upstream trouble</html>")
				}
			}))
			st.secrets[SecretBingKey] = "k"
			rs, err := call(t, newTool(t, st, nil), `{"query": "x"}`)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				wantEmptyJSON(t, rs)
				return
			}
			wantFailure(t, err, tc.code, tc.reasons...)
		})
	}
}

func TestGoogle(t *testing.T) {
	queries := make(chan string, 10)
	_, st := engineServer(t, EngineGoogle, "/customsearch/v1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries <- r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Write(fixture(t, "google/results.json"))
	}))
	tool := newTool(t, st, nil)

	_, err := call(t, tool, `{"query": "泛型 golang"}`)
	wantFailure(t, err, tools.CodeActionUnavailable, "Google", "ferry secret set search.google.key")
	st.secrets[SecretGoogleKey] = "AIza-test"
	_, err = call(t, tool, `{"query": "泛型 golang"}`)
	wantFailure(t, err, tools.CodeActionUnavailable, "Google", "ferry config set search.google.cx")
	if len(queries) != 0 {
		t.Fatal("Google was asked without a key and engine id")
	}

	st.settings[SettingGoogleCX] = "017576662512468239146:omuauf_lfve"
	rs, err := call(t, tool, `{"query": "泛型 golang", "max_results": 3}`)
	if err != nil {
		t.Fatal(err)
	}
	raw := <-queries
	for _, p := range []string{"q=%E6%B3%9B%E5%9E%8B+golang", "key=AIza-test", "cx=017576662512468239146%3Aomuauf_lfve", "num=3"} {
		if !strings.Contains(raw, p) {
			t.Errorf("query string %q lacks %q", raw, p)
		}
	}
	want := []Result{
		{"Tutorial: Getting started with generics - The Go Programming ...", "https://go.dev/doc/tutorial/generics",
			"This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of ..."},
		{"Go 语言泛型 | 菜鸟教程", "https://www.runoob.com/go/go-generics.html", "Mar 14, 2023 ... Go 1.18 版本引入了泛型（Generics）&类型参数。"},
		{"spec: add generic programming using type parameters · Issue ...", "https://github.com/golang/go/issues/43651", "Jan 12, 2021 ... We propose adding support for type parameters to Go."},
	}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("results:\n got %+v\nwant %+v", rs, want)
	}
	rs, err = call(t, tool, `{"query": "泛型 golang", "max_results": 1}`)
	<-queries
	if err != nil || len(rs) != 1 {
		t.Errorf("max_results 1: %d results, %v", len(rs), err)
	}
}

func TestGoogleErrors(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		code    tools.Code
		reasons []string
	}{
		{"quota", 429, "google/error_429.json", tools.CodeRateLimited, []string{"Google", "Quota exceeded", "ferry config set search.engine duckduckgo"}},
		{"bad key", 400, "google/error_400_key.json", tools.CodeActionUnavailable, []string{"Google", "API key not valid", "ferry secret set search.google.key"}},
		{"bad cx", 400, "google/error_400_cx.json", tools.CodeHandlerError, []string{"Google", "invalid argument"}},
		{"503", 503, "", tools.CodeHandlerError, []string{"Google", "503"}},
		{"truncated JSON", 200, "", tools.CodeHandlerError, []string{"Google", "JSON"}},
		{"empty", 200, "google/empty.json", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, st := engineServer(t, EngineGoogle, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				if tc.body != "" {
					w.Write(fixture(t, tc.body))
				} else {
					fmt.Fprint(w, `{"items": [{"title": "cut off`)
				}
			}))
			st.secrets[SecretGoogleKey] = "k"
			st.settings[SettingGoogleCX] = "cx"
			rs, err := call(t, newTool(t, st, nil), `{"query": "x"}`)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				wantEmptyJSON(t, rs)
				return
			}
			wantFailure(t, err, tc.code, tc.reasons...)
		})
	}
}

func TestConfigurationProblems(t *testing.T) {
	ctx := context.Background()

	// A stored engine Ferry does not know reads as the default engine, as every
	// setting that no longer passes its check does.
	_, st := engineServer(t, EngineDuckDuckGo, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(fixture(t, "duckduckgo/results.html"))
	}))
	st.settings[SettingEngine] = "yahoo"
	if rs, err := New(Deps{Settings: st, Secrets: st}).Search(ctx, "x", 5); err != nil || len(rs) == 0 {
		t.Errorf("an unknown stored engine: %v %v; want the default engine's results", rs, err)
	}

	s := New(Deps{Settings: &store{err: errors.New("disk on fire")}})
	if _, err := s.Search(ctx, "x", 5); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("storage error = %v", err)
	}

	_, err := New(Deps{}).Search(ctx, "   ", 5)
	wantFailure(t, err, tools.CodeInvalidParams, "blank")
}

func TestMaxResultsRange(t *testing.T) {
	_, st := engineServer(t, EngineDuckDuckGo, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(fixture(t, "duckduckgo/results.html"))
	}))
	s := New(Deps{Settings: st, Secrets: st})
	for n, want := range map[int]int{0: 5, -3: 1, 1: 1, 99: 7} {
		rs, err := s.Search(context.Background(), "go", n)
		if err != nil || len(rs) != want {
			t.Errorf("maxResults %d: %d results (%v), want %d", n, len(rs), err, want)
		}
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	_, st := engineServer(t, EngineDuckDuckGo, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	_, err := call(t, newTool(t, st, &http.Client{Timeout: 100 * time.Millisecond}), `{"query": "slow"}`)
	wantFailure(t, err, tools.CodeTimeout, "DuckDuckGo", "in time")
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	st := &store{settings: map[string]string{SettingEngine: EngineBaidu, EndpointSetting(EngineBaidu): url + "/s"}}
	_, err := call(t, newTool(t, st, nil), `{"query": "x"}`)
	wantFailure(t, err, tools.CodeHandlerError, "Baidu could not be reached")
}

func TestDuckDuckGoURL(t *testing.T) {
	cases := map[string]string{
		"//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2F&rut=abc":             "https://go.dev/",
		"/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3Dc%26d%3De&rut=x":         "https://example.com/a?b=c&d=e",
		"https://example.org/direct":                                           "https://example.org/direct",
		"//example.net/protocol-relative":                                      "https://example.net/protocol-relative",
		"https://duckduckgo.com/y.js?ad_domain=ads.example&ad_provider=bingv7": "",
		"//duckduckgo.com/l/?uddg=javascript%3Aalert(1)":                       "",
		"//duckduckgo.com/l/?rut=only":                                         "",
		"javascript:alert(1)":                                                  "",
		"":                                                                     "",
		"%zz":                                                                  "",
	}
	for in, want := range cases {
		if got := duckduckgoURL(in); got != want {
			t.Errorf("duckduckgoURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	cases := map[string]string{
		"  a \n\t b  ":                "a b",
		"\ue000Go\ue001 generics":     "Go generics",
		"x\u00a0\u00a0y\u3000z":       "x y z",
		"<b>bold</b> and <em>em</em>": "bold and em",
	}
	for in, want := range cases {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cleanAPI("we&#39;ve &amp; <b>they</b>&nbsp;have"); got != "we've & they have" {
		t.Errorf("cleanAPI = %q", got)
	}
}

// The host reads both through its *storage.DB.
var (
	_ config.Reader = (*storage.DB)(nil)
	_ Secrets       = (*storage.DB)(nil)
)

func TestWithStorage(t *testing.T) {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Ocp-Apim-Subscription-Key")
		w.Write(fixture(t, "bing/results.json"))
	}))
	defer srv.Close()
	ctx := context.Background()
	for k, v := range map[string]string{SettingEngine: EngineBing, EndpointSetting(EngineBing): srv.URL} {
		if err := db.SetSetting(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Deps{Settings: config.NewLive(db, nil), Secrets: db})
	_, err = s.Search(ctx, "go", 2)
	wantFailure(t, err, tools.CodeActionUnavailable, "ferry secret set search.bing.key")
	if err := db.SetSecret(ctx, SecretBingKey, []byte("from-the-db")); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Search(ctx, "go", 2)
	if err != nil || len(rs) != 2 {
		t.Fatalf("%d results, %v", len(rs), err)
	}
	if k := <-keys; k != "from-the-db" {
		t.Errorf("key sent = %q", k)
	}
}
