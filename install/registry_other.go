//go:build !windows

package install

// Other systems have no registry; manifests are found by their location on disk.
func systemRegistry() Registry { return nil }
