//go:build !unix

package storage

func isNoSpaceErrno(error) bool { return false }
