// Package printers renders API objects for people and scripts the way
// kubectl does: `skiff get` tables (PrintTable, WatchPrinter), `-o json`
// and `-o yaml` (PrintObject, PrintList), and `skiff describe` (Describe,
// DescribeNode).
//
// Everything here is a pure function of its arguments: objects come in
// already fetched, and the current time comes in as a parameter (ages,
// "lasts 10s"), so output is deterministic and golden-tested byte for
// byte. The package does no I/O besides writing to the io.Writer it is
// given, never talks to the API, and depends only on package api,
// internal/table (the columns and cells it shares with the API server's
// kubectl tables) and sigs.k8s.io/yaml. It must not import the client,
// server or agent.
package printers
