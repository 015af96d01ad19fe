//go:build windows

package install

import (
	"errors"

	"golang.org/x/sys/windows/registry"
)

type winRegistry struct{}

func systemRegistry() Registry { return winRegistry{} }

func hive(r RegRoot) registry.Key {
	if r == LocalMachine {
		return registry.LOCAL_MACHINE
	}
	return registry.CURRENT_USER
}

func (winRegistry) Default(root RegRoot, key string) (string, bool, error) {
	k, err := registry.OpenKey(hive(root), key, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer k.Close()
	v, _, err := k.GetStringValue("")
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}

func (winRegistry) SetDefault(root RegRoot, key, value string) error {
	k, _, err := registry.CreateKey(hive(root), key, registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	return k.SetStringValue("", value)
}

func (winRegistry) DeleteKey(root RegRoot, key string) error {
	err := registry.DeleteKey(hive(root), key)
	if errors.Is(err, registry.ErrNotExist) {
		return nil
	}
	return err
}
