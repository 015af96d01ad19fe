package storage

import (
	"fmt"
	"testing"
)

// Every refusal of the store carries the kind the edges map it by, through any
// wrapping; a failure of the database itself carries none.
func TestErrorKinds(t *testing.T) {
	for err, want := range map[error]Kind{
		ErrConversationNotFound: NotFound, ErrRunNotFound: NotFound, ErrProviderNotFound: NotFound,
		ErrTaskNotFound: NotFound, ErrFileNotFound: NotFound, ErrNoSuchVersion: NotFound,
		ErrBadTaskStatus: Invalid, ErrEmptyTaskTitle: Invalid, ErrPathEscapes: Invalid, ErrPathNUL: Invalid,
		ErrPathControl: Invalid, ErrPathBackslash: Invalid, ErrPathNotUTF8: Invalid, ErrPathTooLong: Invalid,
		ErrSegmentTooLong: Invalid, ErrPathEmptySegment: Invalid, ErrPathIsRoot: Invalid,
		ErrIsFolder: Conflict, ErrParentIsFile: Conflict, ErrNotFolder: Conflict, ErrNoVersions: Conflict,
		ErrBadWorkspaceSetting: Conflict, ErrQuotaExceeded: Quota,
		ErrSchemaTooNew: KindNone,
	} {
		if got := KindOf(fmt.Errorf("doing a thing: %w", err)); got != want {
			t.Errorf("%q: kind %v, want %v", err, got, want)
		}
	}
	if NotFound.String() != "not_found" || Quota.String() != "quota" || KindNone.String() != "" {
		t.Fatal("kind names")
	}
}
