// Package storagetest is the test harness and fixtures for package
// storage: opening a Store on a temporary file, realistic objects, and
// helpers to read a watch with a deadline. It is for tests only and must
// not be imported by production code.
package storagetest
