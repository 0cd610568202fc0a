package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
)

// sqliteType is the media type of a user DB file, the one non-JSON body
// the API takes (POST /v1/import, ctl only).
const sqliteType = "application/vnd.sqlite3"

// The daemon may run as a service account that cannot read or write the
// administrator's files (a systemd DynamicUser with ProtectHome), so
// export and import move the file in the HTTP body, spooled through a
// private directory inside the data directory and removed afterwards.

// spool makes a private (0700) directory for one transfer; the caller
// removes it.
func (s *Server) spool() (string, error) {
	dir, err := os.MkdirTemp(s.core.DataDir(), ".transfer-")
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o700)
}

// export answers the user DB without secrets (POST /v1/export, ctl).
func (s *Server) export(c echo.Context) error {
	dir, err := s.spool()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "export.db")
	if err := s.records.Export(c.Request().Context(), path); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c.Response().Header().Set("Content-Disposition", `attachment; filename="snugd-export.db"`)
	return c.Stream(http.StatusOK, sqliteType, f)
}

// importDB reconciles an uploaded user DB (POST /v1/import, ctl): the body
// is the SQLite file itself.
func (s *Server) importDB(c echo.Context) error {
	if !sameMediaType(c.Request().Header.Get("Content-Type"), sqliteType) {
		return errcode.New(errcode.UnsupportedMediaType, "the body must be the SQLite file ("+sqliteType+")")
	}
	dir, err := s.spool()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "import.db")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, c.Request().Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return spoolError(err)
	}
	r, err := s.records.Import(c.Request().Context(), path)
	if err != nil {
		return err
	}
	out := ImportReportJSON{Restored: r.Restored, Demoted: r.Demoted, Dropped: []DroppedRow{}, Landed: []LandedRow{}}
	for _, l := range r.Landed {
		out.Landed = append(out.Landed, LandedRow{AppID: l.AppID, Slot: l.Slot, Replaced: l.Replaced, CredentialsCleared: l.CredentialsCleared})
	}
	for _, d := range r.Dropped {
		out.Dropped = append(out.Dropped, DroppedRow{AppID: d.AppID, Slot: d.Slot, Reason: d.Reason})
	}
	return c.JSON(http.StatusOK, out)
}

// spoolError maps a failure to spool an upload: the disk refusing the
// write is STORAGE_FULL (nothing was imported), anything else the body's.
func spoolError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS) {
		return errcode.New(errcode.StorageFull, "the disk holding snugd's data is full or read-only; nothing was imported")
	}
	return bodyError(err)
}
