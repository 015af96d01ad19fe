//go:build !linux

package control

// Parent describes the process that started this one. TODO: macOS (proc_pidpath)
// and Windows; the origin alone identifies the extension meanwhile.
func Parent() (browser, profile string) { return "", "" }
