package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, true, "1.4.0"},           // go install …@v1.4.0
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.5.0-rc.1"}}, true, "1.5.0-rc.1"}, // a pre-release tag
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, DevVersion},       // go build in a checkout
		{nil, false, DevVersion},
	} {
		if got := moduleVersion(tc.bi, tc.ok); got != tc.want {
			t.Errorf("moduleVersion(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}
