package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CacheDir is where the benchmarks install what they need from npm:
// FERRY_BENCH_NPM, else ~/.cache/ferry/NAME.
func CacheDir(name string) string {
	if d := os.Getenv("FERRY_BENCH_NPM"); d != "" {
		return filepath.Join(d, name)
	}
	home, _ := os.UserCacheDir()
	return filepath.Join(home, "ferry", name)
}

// NPM installs pkg@version from the npm registry into CacheDir(name) unless it is
// there, and returns that directory.
func NPM(name, pkg, version string, env ...string) (string, error) {
	dir := CacheDir(name)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"ferry-bench-`+name+`","private":true}`), 0o644)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--silent", pkg+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s@%s: %v: %s", pkg, version, err, out)
	}
	return dir, nil
}

// O200k counts the o200k_base tokens (the tokenizer of OpenAI's current models) of
// each text with js-tiktoken from npm, installed on first use; the error says why
// when Node or npm cannot.
func O200k(texts []string) ([]int, error) {
	dir, err := NPM("tokenizer", "js-tiktoken", "1.0.21")
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(texts)
	if err != nil {
		return nil, err
	}
	const script = `const { getEncoding } = require('js-tiktoken');
const enc = getEncoding('o200k_base');
let s = ''; process.stdin.on('data', (d) => { s += d; });
process.stdin.on('end', () => { process.stdout.write(JSON.stringify(JSON.parse(s).map((t) => enc.encode(t).length))); });`
	cmd := exec.Command("node", "-e", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("counting tokens with node: %v", err)
	}
	var n []int
	if err := json.Unmarshal(out, &n); err != nil {
		return nil, err
	}
	return n, nil
}

// O200kTotal is the o200k_base tokens of all texts together; 0 and the error when
// they cannot be counted.
func O200kTotal(texts []string) (int, error) {
	n, err := O200k(texts)
	total := 0
	for _, x := range n {
		total += x
	}
	return total, err
}
