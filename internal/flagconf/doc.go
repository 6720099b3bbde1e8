// Package flagconf layers skiff's configuration sources onto a flag.FlagSet:
// command-line flags win over SKIFF_<FLAG> environment variables, which win
// over keys in YAML config files, which win over the flags' defaults. It
// reads files and the environment it is handed; it keeps no state.
package flagconf
