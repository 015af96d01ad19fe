package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json golden schemas")

func noop(ctx context.Context, c *Call) (any, error) { return nil, nil }

// TestDialectsGolden normalises each dialect and compares the schema the model sees
// with testdata/<name>.json.
func TestDialectsGolden(t *testing.T) {
	cases := []struct {
		name    string
		params  string
		dialect Dialect
	}{
		{"none", ``, DialectNone},
		{"empty_object", `{}`, DialectNone},
		{"shorthand", `{
			"productId": {"type": "string", "required": true, "description": "SKU of the product"},
			"quantity":  {"type": "number", "description": "Defaults to 1"},
			"gift":      {"type": "boolean"},
			"colour":    {"type": "string", "enum": ["red", "blue"], "default": "red"}
		}`, DialectShorthand},
		{"list", `[{"name": "text", "label": "待办内容，1–80 个字符，不能只包含空格", "minLength": 1, "maxLength": 80, "pattern": "\\S"},
			{"name": "due", "label": "Due date", "type": "string", "format": "date", "optional": true},
			{"name": "priority", "type": "integer", "minimum": 1, "maximum": 5, "enum": [1, 3, 5], "optional": true},
			{"name": "token", "secret": true, "optional": true}]`, DialectList},
		{"raw_2020", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
			"properties": {"q": {"type": "string", "pattern": "^<\\d+>$"}, "tags": {"type": "array", "prefixItems": [{"type": "string"}]}},
			"required": ["q"]}`, DialectSchema},
		{"raw_draft07", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
			"properties": {"url": {"type": "string", "format": "uri"}, "n": {"type": "integer", "exclusiveMinimum": 0}},
			"definitions": {"x": {"type": "string"}}}`, DialectSchema},
		{"raw_no_schema_keyword", `{"type": "object", "properties": {"type": {"type": "string"}}}`, DialectSchema},
		{"shorthand_param_named_type", `{"type": {"type": "string", "required": true}}`, DialectShorthand},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NormalizeParameters(json.RawMessage(c.params))
			if err != nil {
				t.Fatal(err)
			}
			if s.Dialect != c.dialect {
				t.Fatalf("dialect %s, want %s", s.Dialect, c.dialect)
			}
			var pretty bytes.Buffer
			json.Indent(&pretty, s.JSON, "", "  ")
			pretty.WriteByte('\n')
			file := filepath.Join("testdata", c.name+".json")
			if *update {
				must(t, os.WriteFile(file, pretty.Bytes(), 0o644))
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Fatalf("schema differs from %s (run with -update to accept):\n%s", file, pretty.Bytes())
			}
		})
	}
}

func TestDialectValidation(t *testing.T) {
	list, err := NormalizeParameters(json.RawMessage(`[{"name":"text","minLength":1,"maxLength":80,"pattern":"\\S"},{"name":"n","type":"integer","optional":true,"minimum":1}]`))
	must(t, err)
	short, err := NormalizeParameters(json.RawMessage(`{"productId":{"type":"string","required":true},"quantity":{"type":"number"}}`))
	must(t, err)
	d07, err := NormalizeParameters(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0}},"items":[{"type":"string"}]}`))
	must(t, err)
	for _, c := range []struct {
		s    *Schema
		args string
		want string // "" means valid
	}{
		{list, `{"text":"hi"}`, ""},
		{list, `{}`, "/text: required property is missing"},
		{list, `{"text":""}`, "/text: length must be >= 1, but got 0"},
		{list, `{"text":"   "}`, `/text: does not match pattern \S`},
		// U+3000 is white space to ECMAScript's \s but not to Go's: the browser
		// refuses it, and so must the host.
		{list, "{\"text\":\"\u3000\"}", `/text: does not match pattern \S`},
		{list, `{"text":"` + strings.Repeat("x", 81) + `"}`, "/text: length must be <= 80"},
		{list, `{"text":"x","n":0}`, "/n: must be >= 1"},
		{list, `{"text":"x","n":1.5}`, "/n: expected integer"},
		{list, `{"text":"x","other":1}`, "/other: property is not allowed"},
		{short, `{"productId":"SKU-42"}`, ""},
		{short, `{"quantity":"2"}`, "/productId: required property is missing; /quantity: expected number, but got string"},
		{d07, `{"n":1}`, ""},
		{d07, `{"n":0}`, "/n: must be > 0"},
	} {
		args, err := decodeArguments(json.RawMessage(c.args))
		must(t, err)
		var parts []string
		for _, v := range c.s.Validate(args) {
			parts = append(parts, v.String())
		}
		if got := strings.Join(parts, "; "); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%s: got %q, want %q", c.args, got, c.want)
		}
	}
}

func TestBadSchemasRefused(t *testing.T) {
	for params, want := range map[string]string{
		`{"type":"object","properties":{"a":{"type":"strng"}}}`: "does not compile",
		`{"type":"string"}`: `must have "type": "object"`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`: "is not supported",
		`{"a":{"type":"text"}}`:                                "type must be one of",
		`{"a":{"type":"string","requird":true}}`:               `unknown member "requird"`,
		`{"a":"string"}`:                                       `parameter "a" must be an object`,
		`[{"label":"x"}]`:                                      `needs a "name"`,
		`[{"name":"a"},{"name":"a"}]`:                          "listed twice",
		`[{"name":"a","min":1}]`:                               `unknown member "min"`,
		`[{"name":"a","pattern":"(?=x)"}]`:                     "lookahead",
		`[{"name":"a","pattern":"(a)\\1"}]`:                    "backreference",
		`{"type":"object","patternProperties":{"^(?<=a)":{}}}`: "lookahead and lookbehind",
		`{"type":"object","properties":{"a":{"$ref":"https://example.com/s"}}}`: "does not compile",
		`"x"`: "must be a JSON object",
	} {
		_, err := NormalizeParameters(json.RawMessage(params))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", params, err, want)
		}
	}
}

func TestECMARegex(t *testing.T) {
	ok := []struct{ src, match, nomatch string }{
		{`\S`, "a", " \u00a0\u3000\ufeff"},
		{`^\s+$`, " \t\v\u00a0\u2028\u3000\ufeff", "x"},
		{`^.$`, "😀", "\r"},
		{`^.$`, "a", "\u2028"},
		{`^[^]$`, "\n", ""},
		{`^a[]?$`, "a", "b"},
		{`^\d{2,3}$`, "123", "١٢"},
		{`^\w+$`, "abc_1", "é"},
		{`^[\b]$`, "\b", "b"},
		{`^\u00e9\u{1F600}\uD83D\uDE00$`, "é😀😀", "e"},
		{`^\x41\cJ\0$`, "A\n\x00", "A"},
		{`^(?<year>\d{4})-(?:\d\d)$`, "2026-01", "26-01"},
		{`^[a-z\-\d\s]+$`, "a-1 b", "A"},
		{`^\p{Lu}\p{Script=Greek}$`, "Aα", "aα"},
		{`^a*?b+?c??$`, "aabbc", "ca"},
		{`^\/\.\*$`, "/.*", "/a"},
		{`[`, "", ""}, // refused below: listed here by mistake would fail
	}
	for _, c := range ok[:len(ok)-1] {
		goPat, err := TranslateECMARegex(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		re := regexp.MustCompile(goPat)
		if !re.MatchString(c.match) {
			t.Errorf("%s (as %s) does not match %q", c.src, goPat, c.match)
		}
		for _, r := range c.nomatch {
			if c.nomatch != "" && re.MatchString(string(r)) && c.src != `^\s+$` {
				t.Errorf("%s (as %s) matches %q", c.src, goPat, string(r))
			}
		}
		if c.src == `^\s+$` && re.MatchString(c.nomatch) {
			t.Errorf("%s matches %q", c.src, c.nomatch)
		}
	}
	for src, want := range map[string]string{
		`(?=a)`:        "lookahead",
		`(?!a)`:        "lookahead",
		`(?<=a)b`:      "lookbehind",
		`(?<!a)b`:      "lookbehind",
		`(a)\1`:        "backreference",
		`(?<n>a)\k<n>`: "backreference",
		`[\S]`:         "inside a character class",
		`(?i)a`:        "inline flags",
		`a{2,1001}`:    "over 1000",
		`a{`:           "lone {",
		`a}`:           "lone }",
		`]`:            "lone ]",
		`*a`:           "nothing to repeat",
		`^*`:           "nothing to repeat",
		`a**`:          "nothing to repeat",
		`\q`:           "not valid in a Unicode-mode pattern",
		`\uD800`:       "lone surrogate",
		`\p{Foo}`:      "not one the host evaluates",
		`[\d-z]`:       "class escape",
		`(a`:           "unclosed group",
		`a)`:           "unmatched )",
		`[a`:           "not closed",
		`[z-a]`:        "not one the host can evaluate",
		`\`:            "lone backslash",
	} {
		if _, err := TranslateECMARegex(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
}

func TestRegistrySources(t *testing.T) {
	r := NewRegistry(Options{})
	must(t, r.Register(Tool{Name: "web_fetch", Run: noop}))
	must(t, r.Register(Tool{Name: "search", App: "crm", Source: SourceCapability, Run: noop}))
	must(t, r.Register(Tool{Name: "crm:export", App: "crm", Source: SourceCapability, Run: noop}))
	must(t, r.Register(Tool{Name: "notes", App: "wiki", Source: SourceCapability, Run: noop}))
	must(t, r.Register(Tool{Name: "add_task", Source: SourcePage, Origin: "https://todo.example", TabID: 7, FrameID: 0, Run: noop}))
	must(t, r.Register(Tool{Name: "pay", Source: SourcePage, Origin: "https://shop.example", TabID: 7, FrameID: 3, Run: noop}))
	must(t, r.Register(Tool{Name: "add_task", Source: SourcePage, Origin: "https://todo.example", TabID: 8, Run: noop}))

	// A page can never shadow a builtin or a capability, by name or by model name.
	for _, name := range []string{"web_fetch", "crm:search", "crm__search"} {
		err := r.Register(Tool{Name: name, Source: SourcePage, Origin: "https://evil.example", TabID: 7, Run: noop})
		if err == nil || !strings.Contains(err.Error(), "never shadow") && !strings.Contains(err.Error(), "the model would see it") {
			t.Errorf("page action %s: %v", name, err)
		}
	}
	names := func(tab int) string {
		var out []string
		for _, l := range r.All(tab) {
			out = append(out, l.ModelName)
		}
		return strings.Join(out, " ")
	}
	if got := names(7); got != "add_task crm__export crm__search pay web_fetch wiki__notes" {
		t.Fatalf("tab 7 lists %s", got)
	}
	if n, _ := r.Resolve("crm__search", 0); n != "crm:search" {
		t.Fatalf("resolve crm__search = %q", n)
	}
	if r.RemoveApp("crm") != 2 || names(0) != "web_fetch wiki__notes" {
		t.Fatalf("after RemoveApp: %s", names(0))
	}
	if r.RemoveFrame(7, 3) != 1 || names(7) != "add_task web_fetch wiki__notes" {
		t.Fatalf("after RemoveFrame: %s", names(7))
	}
	if r.RemoveTab(7) != 1 || names(7) != "web_fetch wiki__notes" || names(8) != "add_task web_fetch wiki__notes" {
		t.Fatalf("after RemoveTab: %s / %s", names(7), names(8))
	}
	// Registering again replaces.
	must(t, r.Register(Tool{Name: "web_fetch", Description: "v2", Run: noop}))
	if l := r.All(0); l[0].Description != "v2" || len(l) != 2 {
		t.Fatalf("replacement: %+v", l)
	}
	// A page action is found only in its tab.
	res := r.Call(context.Background(), &Call{Tool: "add_task", TabID: 9})
	if res.Code != CodeNotFound || !strings.Contains(res.Reason, "tab 9") {
		t.Fatalf("%+v", res)
	}
	if res := r.Call(context.Background(), &Call{Tool: "add_task", TabID: 8}); !res.Success {
		t.Fatalf("%+v", res)
	}
	for _, bad := range []Tool{
		{Name: "has space", Run: noop},
		{Name: "x", Source: SourceCapability, Run: noop},
		{Name: "x", Source: SourcePage, Run: noop},
		{Name: "x"},
		{Name: "x", Kind: "delete", Run: noop},
		{Name: "x", Permissions: []string{"root"}, Run: noop},
	} {
		if err := r.Register(bad); err == nil {
			t.Errorf("registered %+v", bad)
		}
	}
}

func TestListingTokensAndAvailability(t *testing.T) {
	r := NewRegistry(Options{})
	must(t, r.Register(Tool{Name: "b", Description: "second", Run: noop}))
	must(t, r.Register(Tool{Name: "a", Description: "first", Run: noop,
		Available: func(ctx context.Context, c *Call) (bool, string) { return false, "list full" }}))
	avail, unavail := r.List(context.Background(), 0)
	if len(avail) != 1 || avail[0].Name != "b" || len(unavail) != 1 || unavail[0] != (Unavailable{"a", "list full"}) {
		t.Fatalf("%+v %+v", avail, unavail)
	}
	def := `{"type":"function","function":{"name":"b","description":"second","parameters":{"type":"object","properties":{},"additionalProperties":false}}}`
	if got := string(OpenAIDefinition("b", "second", avail[0].Parameters)); got != def {
		t.Fatalf("definition %s", got)
	}
	if avail[0].Tokens != EstimateTokens([]byte(def)) || avail[0].Tokens != (len(def)*20+84)/85 {
		t.Fatalf("tokens %d for %d bytes", avail[0].Tokens, len(def))
	}
	// A character outside ASCII counts for less than its bytes: CJK runs near a token
	// a character in o200k_base, not three.
	if n := EstimateTokens([]byte("搜索商品")); n != 4 {
		t.Fatalf("four CJK characters estimated %d tokens", n)
	}
}

func TestModelNames(t *testing.T) {
	for in, want := range map[string]string{
		"web_fetch":  "web_fetch",
		"crm:search": "crm__search",
		"a__b":       ModelName("a__b"),
	} {
		if got := ModelName(in); got != want || !ValidModelName(got) {
			t.Errorf("ModelName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ModelName("a__b"); got == "a__b" || !strings.HasPrefix(got, "a__b_") {
		t.Errorf("a name with __ must be hashed so it cannot collide with app:name: %q", got)
	}
	long := strings.Repeat("x", 100)
	if got := ModelName(long); len(got) != 64 || got == ModelName(long+"y") {
		t.Errorf("long names: %q", got)
	}
	if ModelName("数据:导出") == ModelName("数据:导入") {
		t.Error("non-ASCII names collide")
	}
}

func FuzzModelName(f *testing.F) {
	for _, s := range []string{"web_fetch", "crm:search", "a:b:c", "数据", strings.Repeat("é", 70), "a__b", "_:_", ""} {
		f.Add(s, "crm:search")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ma := ModelName(a)
		if !ValidModelName(ma) {
			t.Fatalf("ModelName(%q) = %q is not a valid model name", a, ma)
		}
		if ma != ModelName(a) {
			t.Fatal("not deterministic")
		}
		if a != b && ma == ModelName(b) {
			t.Fatalf("%q and %q both map to %q", a, b, ma)
		}
		// Round trip through a registry.
		if checkName(a) != nil {
			return
		}
		r := NewRegistry(Options{})
		tool := Tool{Name: a, Source: SourcePage, Origin: "https://x.example", TabID: 1, Run: noop}
		if err := r.Register(tool); err != nil {
			t.Fatalf("register %q: %v", a, err)
		}
		if got, ok := r.Resolve(ma, 1); !ok || got != a {
			t.Fatalf("Resolve(%q) = %q, want %q", ma, got, a)
		}
	})
}

// FuzzECMARegex: the translator never panics, and what it accepts Go compiles.
func FuzzECMARegex(f *testing.F) {
	for _, s := range []string{`\S`, `^[a-z\d]{1,3}$`, `(?<n>x)|\u{1F600}`, `[^\b\-]`, `\p{L}+`, `a{1,}?`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if goPat, err := TranslateECMARegex(src); err == nil {
			regexp.MustCompile(goPat)
		}
	})
}

// PROTOCOL.md's table of tool results lists exactly the codes a result can carry.
func TestProtocolMDResultCodes(t *testing.T) {
	doc, err := os.ReadFile("../../protocol/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## Tool results"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var codes []string
	for _, c := range Codes {
		codes = append(codes, string(c))
	}
	if strings.Join(documented, " ") != strings.Join(codes, " ") {
		t.Fatalf("PROTOCOL.md documents %v; the code has %v", documented, codes)
	}
}
