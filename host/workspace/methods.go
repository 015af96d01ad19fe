package workspace

import (
	"context"
	"fmt"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// The options page's view of the workspace (workspace.*): the same listing and
// deletion as opfs_list and opfs_delete. Storage's refusals go back as they are: the
// host maps their kinds to JSON-RPC errors.

// PageStore is what the options page's methods need; *storage.DB implements it.
type PageStore interface {
	Store
	Stat(ctx context.Context, path string) (storage.FileInfo, error)
	WorkspaceUsage(ctx context.Context) (storage.Usage, error)
}

// MaxPageRead is the largest file workspace.read returns: the options page shows
// or downloads it in one message, and a data URL is a third larger than the file.
const MaxPageRead = 16 << 20

// RegisterMethods adds workspace.list, workspace.read, workspace.delete and
// workspace.usage.
func RegisterMethods(mux *protocol.Mux, store PageStore, settings config.Settings, log zerolog.Logger) {
	m := pageMethods{store, settings, log}
	protocol.Handle(mux, "workspace.list", m.list)
	protocol.Handle(mux, "workspace.read", m.read)
	protocol.Handle(mux, "workspace.delete", m.delete)
	protocol.Handle(mux, "workspace.usage", m.usage)
}

type pageMethods struct {
	db       PageStore
	settings config.Settings
	log      zerolog.Logger
}

type pathParams struct {
	Path string `json:"path"`
}

// pageEntry is an opfs_list entry with its full path, which the page links to.
type pageEntry struct {
	Entry
	Path string `json:"path"`
}

func (m pageMethods) list(ctx context.Context, p pathParams) (any, error) {
	l, err := list(ctx, m.db, p.Path)
	if err != nil {
		return nil, err
	}
	out := make([]pageEntry, 0, len(l.Entries))
	for _, e := range l.Entries {
		out = append(out, pageEntry{e, join(l.Path, e.Name)})
	}
	return map[string]any{"path": l.Path, "entries": out}, nil
}

func (m pageMethods) read(ctx context.Context, p pathParams) (any, error) {
	fi, err := m.db.Stat(ctx, p.Path)
	if err != nil {
		return nil, err
	}
	if fi.Size > MaxPageRead {
		return nil, &protocol.Error{Code: protocol.CodeInvalidParams,
			Message: fmt.Sprintf("%s is %d bytes, more than the %d the options page can open; read it with `ferry call opfs_read`", fi.Path, fi.Size, MaxPageRead),
			Data:    map[string]string{"reason": "too_large"}}
	}
	f, err := m.db.ReadFile(ctx, p.Path)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"path": f.Path, "mime": f.MIME, "size": f.Size, "is_text": f.IsText,
		"version": f.Version, "modified": f.ModifiedAt.UTC().Format(timeFormat)}
	if f.IsText {
		out["text"] = string(f.Content)
	} else {
		out["data_url"] = dataURL(f.MIME, f.Content)
	}
	return out, nil
}

func (m pageMethods) delete(ctx context.Context, p pathParams) (any, error) {
	out, err := remove(ctx, m.db, p.Path)
	if err != nil {
		return nil, err
	}
	m.log.Info().Str("path", out.Path).Int("files", out.Files).Msg("workspace delete from the options page")
	return out, nil
}

func (m pageMethods) usage(ctx context.Context, _ struct{}) (any, error) {
	used, err := m.db.WorkspaceUsage(ctx)
	if err != nil {
		return nil, err
	}
	// bytes is what the quota counts: files and the versions kept for undo.
	return map[string]int64{"bytes": used.Total(), "files": used.Files, "versions": used.Versions,
		"quota": m.settings.Snapshot(ctx).Int64(storage.SettingWorkspaceQuota)}, nil
}
