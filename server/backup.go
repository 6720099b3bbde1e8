package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/skiffhq/skiff/api"
)

// backupPath is where an admin downloads a consistent copy of the store
// while the server runs (`skiff server backup --to FILE` uses it).
const backupPath = "/api/v1/skiff/backup"

// backup streams a copy of the store made by its online backup. The copy
// is written next to the database (same filesystem, owner-only) and
// removed once sent.
func (s *server) backup(w http.ResponseWriter, r *http.Request) {
	dir, err := os.MkdirTemp(s.cfg.serverDir(), ".backup-")
	if err != nil {
		s.log.Error("backup: temporary directory", "err", err)
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "backup: %v", err))
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")
	if err := s.store.Backup(r.Context(), path); err != nil {
		s.log.Error("backup", "err", err)
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "backup: %v", err))
		return
	}
	f, err := os.Open(path)
	if err != nil {
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "backup: %v", err))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "backup: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/vnd.sqlite3")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, f); err != nil {
		s.log.Warn("backup: send", "err", err)
	}
}
