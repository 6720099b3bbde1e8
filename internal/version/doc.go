// Package version reports which skiff build is running. The two variables
// are stamped at link time by the Makefile (-ldflags -X) and never change
// after start; nothing else in skiff writes them.
package version
