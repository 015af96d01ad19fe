// Package migrate reads a database's schema migrations: numbered SQL files
// (NNNN_description.sql) embedded in the binary. Ferry's own database (storage) and
// the gateway's (gateway/store) each apply them in their own way.
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Step is one migration: its number, the description in its file name, its SQL.
type Step struct {
	Version int
	Name    string
	SQL     string
}

// Load reads every file of dir in fsys, in order. The files must be numbered 1, 2,
// 3… without a gap, so that a database's version is the count of steps applied.
func Load(fsys fs.FS, dir string) ([]Step, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var steps []Step
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		steps = append(steps, Step{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Version < steps[j].Version })
	for i, s := range steps {
		if s.Version != i+1 {
			return nil, fmt.Errorf("migrations must be numbered 1, 2, 3…: found %d at position %d", s.Version, i+1)
		}
	}
	return steps, nil
}
