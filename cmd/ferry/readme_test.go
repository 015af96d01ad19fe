package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeSection is the README's section under "## heading", up to the next one.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	_, sec, ok := strings.Cut(readme(t), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README has no %s section", heading)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}

// readmeCommandRows is the first cell of each row of the README's command table.
func readmeCommandRows(t *testing.T) []string {
	t.Helper()
	sec, _, _ := strings.Cut(readmeSection(t, "Command line"), "\n\n`FERRY_HOME`")
	var rows []string
	for _, l := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		// A cell ends at the first | that is not escaped (\|) inside a command.
		cell := regexp.MustCompile(`^\| ((?:[^|\\]|\\.)*) \|`).FindStringSubmatch(l)
		if cell == nil {
			t.Fatalf("README command row without a first cell: %q", l)
		}
		rows = append(rows, strings.ReplaceAll(cell[1], `\|`, "|"))
	}
	return rows
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// A flag in a README command (--name) or at the start of a line of a command's
	// help (Go's "  -name type" or a written "  --name ARG").
	readmeFlag = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	helpFlag   = regexp.MustCompile(`(?m)^\s{1,6}--?([a-z][a-z0-9-]*)\b`)
	subWord    = regexp.MustCompile(`^[a-z]+$`)
	// A default stated right after a setting: "… default `V`" or "`V` (default".
	statedDefault = regexp.MustCompile("(?:default:?\\s+`([^`]*)`|`([^`]*)` \\(default)")
)

// TestREADMECommandTable holds the README's command table to the binary: the
// commands are those `ferry help` lists, and each command the table shows with its
// flags has exactly the flags its own help lists.
func TestREADMECommandTable(t *testing.T) {
	rows := readmeCommandRows(t)
	if len(rows) < 10 {
		t.Fatalf("only %d rows in the README's command table", len(rows))
	}
	out, err := exec.Command(ferryBin, "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(string(out), "Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var helped []string
	for _, l := range strings.Split(list, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			helped = append(helped, f[0])
		}
	}

	documented := map[string]bool{}
	checked := 0
	for _, row := range rows {
		spans := backticked.FindAllStringSubmatch(row, -1)
		words := strings.Fields(spans[0][1])
		if words[0] != "ferry" {
			t.Errorf("README command row does not start with ferry: %q", row)
			continue
		}
		if len(words) == 1 {
			continue // host mode, started by a browser
		}
		name := words[1]
		documented[name] = true
		if strings.Contains(row, "(same flags)") || name == "gateway" {
			continue // the gateway has its own section and help
		}
		for i, span := range spans {
			w := strings.Fields(span[1])
			var cmd []string
			switch {
			case i == 0 && len(w) > 2 && subWord.MatchString(w[2]):
				cmd = []string{name, w[2]}
			case i == 0:
				cmd = []string{name}
			case subWord.MatchString(w[0]):
				cmd = []string{name, w[0]} // "… / remove ID / test [ID]": more of the same command
			default:
				continue // a value in the description, not a command
			}
			if name == "config" || name == "secret" || name == "version" {
				continue // no flags: their help is a usage line
			}
			want := flagSet(readmeFlag.FindAllStringSubmatch(span[1], -1))
			help, _ := ferryHelp(t, cmd)
			got := flagSet(helpFlag.FindAllStringSubmatch(help, -1))
			if strings.Join(want, " ") != strings.Join(got, " ") {
				t.Errorf("README: `ferry %s` has the flags %v; its -h lists %v:\n%s", strings.Join(cmd, " "), want, got, help)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("only %d commands' flags compared", checked)
	}
	for _, name := range helped {
		if !documented[name] {
			t.Errorf("ferry help lists %s, which the README's command table does not", name)
		}
		delete(documented, name)
	}
	for name := range documented {
		t.Errorf("the README's command table has ferry %s, which ferry help does not list", name)
	}
}

func flagSet(m [][]string) []string {
	var out []string
	for _, f := range m {
		if !slices.Contains(out, f[1]) {
			out = append(out, f[1])
		}
	}
	sort.Strings(out)
	return out
}

// ferryHelp is what `ferry CMD… -h` prints, on either stream, in an empty data
// directory.
func ferryHelp(t *testing.T, cmd []string) (string, int) {
	t.Helper()
	c := exec.Command(ferryBin, append(cmd, "-h")...)
	c.Env = append(os.Environ(), "FERRY_HOME="+t.TempDir())
	out, _ := c.CombinedOutput()
	return string(out), c.ProcessState.ExitCode()
}

// Help never acts: -h as a subcommand's argument prints the usage on stdout and
// leaves the data alone (it once deleted a secret named -h).
func TestHelpNeverActs(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(ferryBin, "secret", "set", "-h")
	cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
	cmd.Stdin = strings.NewReader("value\n")
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "usage: ferry secret") {
		t.Fatalf("secret set -h: %v %s", err, out)
	}
	for _, args := range [][]string{{"secret", "delete", "-h"}, {"config", "get", "--help"}, {"config", "-h"}} {
		out, code := ferryCmd(t, home, args...)
		if code != 0 || !strings.Contains(out, "usage: ferry "+args[0]) {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	if out, _ := ferryCmd(t, home, "secret", "list"); strings.TrimSpace(out) != "" {
		t.Errorf("secrets after help: %q", out)
	}
	// A value is a value, even -h.
	ferryCmd(t, home, "config", "set", "agent.system_prompt", "-h")
	if out, _ := ferryCmd(t, home, "config", "get", "agent.system_prompt"); strings.TrimSpace(out) != "-h" {
		t.Errorf("config set KEY -h stored %q", out)
	}
}

// readmeWithout is the README less the sections named (their settings are another
// program's: the gateway's).
func readmeWithout(t *testing.T, sections ...string) string {
	t.Helper()
	s := readme(t)
	for _, name := range sections {
		start := strings.Index(s, "\n## "+name+"\n")
		if start < 0 {
			t.Fatalf("README has no %s section", name)
		}
		end := strings.Index(s[start+1:], "\n## ")
		if end < 0 {
			s = s[:start]
		} else {
			s = s[:start] + s[start+1+end:]
		}
	}
	return s
}

// wireNames are the method names the protocol documents list (host.hello,
// audit.query, browser.page.capture…), which look like setting keys.
func wireNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, doc := range []string{"PROTOCOL.md", "BROWSER.md", "PAGES.md"} {
		b, err := os.ReadFile("../../protocol/" + doc)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.]+)`").FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
	}
	return names
}

// TestREADMESettings holds the settings the README names to `ferry config list`:
// each exists, and a default the README states is the one in force.
func TestREADMESettings(t *testing.T) {
	out, code := ferryCmd(t, t.TempDir(), "config", "list")
	if code != 0 {
		t.Fatalf("ferry config list: exit %d", code)
	}
	defaults := map[string]string{}
	prefixes := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\S+) = (.*) \(default\)$`).FindAllStringSubmatch(out, -1) {
		defaults[m[1]] = m[2]
		prefixes[strings.SplitN(m[1], ".", 2)[0]] = true
	}
	if len(defaults) < 30 {
		t.Fatalf("only %d settings in ferry config list:\n%s", len(defaults), out)
	}
	wire := wireNames(t)
	// Fenced blocks out (their ``` would pair with the wrong backticks), their
	// `ferry config set` lines kept.
	readme := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").ReplaceAllStringFunc(readmeWithout(t, "Team gateway"), func(block string) string {
		var keep []string
		for _, l := range strings.Split(block, "\n") {
			if strings.HasPrefix(l, "ferry config set ") {
				keep = append(keep, "`"+l+"`")
			}
		}
		return strings.Join(keep, "\n")
	})
	key := regexp.MustCompile(`^[a-z][a-z_]*(\.[a-z_]+)+$`)
	named := 0
	for _, span := range backticked.FindAllStringSubmatchIndex(readme, -1) {
		text := readme[span[2]:span[3]]
		k, value, isSet := strings.Cut(strings.TrimPrefix(text, "ferry config set "), " ")
		if !key.MatchString(k) || !prefixes[strings.SplitN(k, ".", 2)[0]] || wire[k] {
			continue
		}
		named++
		def, ok := defaults[k]
		if !ok {
			t.Errorf("README names the setting %s, which ferry config list does not have", k)
			continue
		}
		if isSet {
			if _, stderr, code := ferryRun(t, t.TempDir(), nil, "config", "set", k, strings.Fields(value)[0]); code != 0 {
				t.Errorf("README's `%s` is refused: %s", text, stderr)
			}
			continue
		}
		after := readme[span[1]:min(len(readme), span[1]+160)]
		after, _, _ = strings.Cut(after, "\n\n")
		for _, next := range backticked.FindAllStringSubmatchIndex(after, -1) {
			if n := after[next[2]:next[3]]; key.MatchString(n) && prefixes[strings.SplitN(n, ".", 2)[0]] {
				after = after[:next[0]] // up to the next setting
				break
			}
		}
		for _, m := range statedDefault.FindAllStringSubmatch(after, 1) {
			if v := m[1] + m[2]; v != def {
				t.Errorf("README says %s defaults to %q; ferry config list says %q", k, v, def)
			}
		}
	}
	if named < 15 {
		t.Errorf("only %d settings found in the README", named)
	}
}

// TestREADMETools holds the README's lists of builtin and browser tools to the
// tools `ferry tools` lists as builtin.
func TestREADMETools(t *testing.T) {
	out, code := ferryCmd(t, t.TempDir(), "tools", "--json")
	var l listed
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("ferry tools --json: exit %d: %s", code, out)
	}
	var builtins []string
	for _, tool := range l.Tools {
		if tool.Source == "builtin" {
			builtins = append(builtins, tool.Name)
		}
	}
	sort.Strings(builtins)
	sec := readmeSection(t, "Tools")
	var listedNames []string
	for _, lead := range []string{"\nBuiltin tools: ", "\nBrowser tools ("} {
		_, para, ok := strings.Cut(sec, lead)
		if !ok {
			t.Fatalf("the README's Tools section has no paragraph starting %q", strings.TrimSpace(lead))
		}
		para, _, _ = strings.Cut(para, "\n\n")
		if lead == "\nBrowser tools (" {
			para, _, _ = strings.Cut(para, ")")
		}
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(para, -1) {
			if !strings.Contains(m[1], ".") && !slices.Contains(listedNames, m[1]) && !strings.HasPrefix(m[1], "agent.") {
				listedNames = append(listedNames, m[1])
			}
		}
	}
	sort.Strings(listedNames)
	if strings.Join(listedNames, " ") != strings.Join(builtins, " ") {
		t.Errorf("the README's Tools section lists\n  %v\nferry tools lists the builtins\n  %v", listedNames, builtins)
	}
}

// TestREADMEFuzzTargets holds the README's list of fuzz targets to the fuzz
// functions of the repository: each in the package the README names.
func TestREADMEFuzzTargets(t *testing.T) {
	_, para, ok := strings.Cut(readmeSection(t, "Tests and benchmarks"), "The fuzz\ntargets: ")
	if !ok {
		t.Fatal("README has no list of fuzz targets")
	}
	para, _, _ = strings.Cut(para, "\n\n")
	listed := map[string]string{}
	for _, clause := range strings.Split(strings.ReplaceAll(para, "\n", " "), ";") {
		names, pkg, ok := strings.Cut(clause, " in `")
		if !ok {
			t.Fatalf("README fuzz clause without its package: %q", clause)
		}
		pkg, _, _ = strings.Cut(pkg, "`")
		for _, m := range regexp.MustCompile("`(Fuzz\\w+)`").FindAllStringSubmatch(names, -1) {
			listed[m[1]+" "+pkg] = pkg
		}
	}
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range fuzz.FindAllStringSubmatch(string(src), -1) {
			if _, ok := listed[m[1]+" "+filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s in %s is not in the README's list of fuzz targets", m[1], rel)
			}
			delete(listed, m[1]+" "+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range listed {
		t.Errorf("the README lists the fuzz target %s, which is not there", k)
	}
}

// TestREADMELayout holds the README's layout table to the tree: every path it names
// exists, and every top-level folder, every room under host/ and every folder under
// tests/ is named.
func TestREADMELayout(t *testing.T) {
	sec := readmeSection(t, "Layout")
	named := map[string]bool{}
	for _, l := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.SplitN(l, "|", 4)
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			p := strings.TrimSuffix(m[1], "/")
			named[p] = true
			named[strings.SplitN(p, "/", 2)[0]] = true // cmd/ferry names cmd
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				t.Errorf("the README's layout names %s: %v", m[1], err)
			}
		}
		// "(`e2e`), (`bench`)": the folders of tests/ are named in its description.
		if strings.Contains(cells[1], "`tests/`") {
			for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
				named["tests/"+m[1]] = true
			}
		}
	}
	for _, dir := range []string{".", "host", "tests"} {
		entries, err := os.ReadDir(filepath.Join("../..", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.ToSlash(filepath.Join(dir, e.Name()))
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "node_modules" {
				continue
			}
			if dir == "." && (e.Name() == "dist") {
				continue // release output, git-ignored
			}
			if !named[p] {
				t.Errorf("%s is not in the README's layout table", p)
			}
		}
	}
}

// TestREADMETroubleshooting: the states the README's troubleshooting table names are
// the ones the options page shows (in English), word for word, and every state that
// is a problem has its row.
func TestREADMETroubleshooting(t *testing.T) {
	b, err := os.ReadFile("../../extension/_locales/en/messages.json")
	if err != nil {
		t.Fatal(err)
	}
	var messages map[string]struct{ Message string }
	if err := json.Unmarshal(b, &messages); err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(readmeSection(t, "Troubleshooting"), "| the options page says | do |")
	sec, _, _ = strings.Cut(sec, "\n\n")
	shown := map[string]bool{}
	for _, l := range strings.Split(sec, "\n")[2:] {
		if cells := strings.Split(l, "|"); len(cells) > 2 {
			for _, s := range strings.Split(cells[1], ",") {
				shown[strings.TrimSpace(s)] = true
			}
		}
	}
	problems := 0
	for key, m := range messages {
		// The host states the page shows (statusX); being connected is no problem.
		if !strings.HasPrefix(key, "status") || key == "statusConnected" || key == "statusConnecting" {
			continue
		}
		problems++
		if !shown[m.Message] {
			t.Errorf("the options page shows %q (%s), which the README's troubleshooting table does not name", m.Message, key)
		}
		delete(shown, m.Message)
	}
	for s := range shown {
		t.Errorf("the README's troubleshooting table names %q, which the options page never shows", s)
	}
	if problems < 4 {
		t.Errorf("only %d problem states among the messages", problems)
	}
}
