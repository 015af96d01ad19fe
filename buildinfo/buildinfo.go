// Package buildinfo holds the identity of this build of Ferry: the names and numbers
// that the host, the installer and the extension must agree on.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// DevVersion is the version of a build from a source checkout.
const DevVersion = "0.1.0"

// Version is the release of this binary: what scripts/release stamps with
// -ldflags "-X github.com/ferryhq/ferry/buildinfo.Version=1.2.3", else the module
// version that `go install github.com/ferryhq/ferry/cmd/ferry@v1.2.3` records, else
// DevVersion.
var Version string

func init() {
	if Version == "" {
		Version = moduleVersion(debug.ReadBuildInfo())
	}
}

func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return DevVersion
}

// Protocol is the wire protocol version exchanged in host.hello. Bump it whenever a
// change would make an older extension misread the host (or the other way round).
const Protocol = 1

// HostName is the native messaging host name the extension connects to.
const HostName = "ferry_host"

// ExtensionID is the ID pinned by the public key in extension/manifest.json.
const ExtensionID = "hbkoapgnaiamicpgipblnghgmidgcmoc"

// VersionLine is what `ferry version` prints; `ferry doctor` parses it back from the
// binary a manifest points at.
func VersionLine() string {
	return fmt.Sprintf("ferry %s (protocol %d)", Version, Protocol)
}
