//go:build race

package web

// The race detector makes this package's parsing five to ten times slower: the
// corpus and size tests scale to it.
const raceEnabled = true
