package storage_test

import (
	"testing"

	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestMain removes the PostgreSQL cluster the conformance tests started.
func TestMain(m *testing.M) { storagetest.Main(m) }
