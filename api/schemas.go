package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/wire"
)

// schemas lists the frame types with a published JSON Schema.
func (s *Server) schemas(c echo.Context) error {
	return c.JSON(http.StatusOK, SchemasResponse{Types: wire.SchemaTypes()})
}

// schema serves one frame type's JSON Schema, byte for byte as published.
func (s *Server) schema(c echo.Context) error {
	b, ok := wire.Schema(param(c, "type"))
	if !ok {
		return errcode.New(errcode.NotFound, "no schema for that frame type")
	}
	return c.Blob(http.StatusOK, "application/schema+json", b)
}

// registry serves the pinned provider registry, the reviewed entry files
// byte for byte.
func (s *Server) registry(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.proposers.RegistryDocument())
}
