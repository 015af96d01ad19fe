package install

// RegRoot names the registry hive a key lives under. Chrome-family browsers on Windows
// find native-messaging hosts only through the registry: per user under HKCU, for
// every user under HKLM.
type RegRoot int

const (
	CurrentUser  RegRoot = iota // HKEY_CURRENT_USER
	LocalMachine                // HKEY_LOCAL_MACHINE
)

func (r RegRoot) String() string {
	if r == LocalMachine {
		return "HKLM"
	}
	return "HKCU"
}

// Registry is the part of the Windows registry the installer touches. It exists so that
// the Windows logic runs, and is tested, on every OS against an in-memory fake.
type Registry interface {
	// Default returns the default (unnamed) string value of root\key; ok is false when
	// the key or the value does not exist.
	Default(root RegRoot, key string) (value string, ok bool, err error)
	// SetDefault creates root\key (and its parents) if needed and sets its default value.
	SetDefault(root RegRoot, key, value string) error
	// DeleteKey removes root\key, which has no subkeys. A missing key is not an error.
	DeleteKey(root RegRoot, key string) error
}
