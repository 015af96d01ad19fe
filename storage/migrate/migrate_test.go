package migrate

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	file := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
	steps, err := Load(fstest.MapFS{
		"m/0002_second.sql": file("B"),
		"m/0001_first.sql":  file("A"),
	}, "m")
	if err != nil || len(steps) != 2 || steps[0] != (Step{1, "first", "A"}) || steps[1] != (Step{2, "second", "B"}) {
		t.Fatalf("%+v %v", steps, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"a gap":      {"m/0001_a.sql": file(""), "m/0003_c.sql": file("")},
		"a twin":     {"m/0001_a.sql": file(""), "m/0001_b.sql": file("")},
		"a bad name": {"m/first.sql": file("")},
	} {
		if _, err := Load(fsys, "m"); err == nil || !strings.Contains(err.Error(), "migration") {
			t.Errorf("%s: %v, want a refusal naming the migrations", name, err)
		}
	}
}
