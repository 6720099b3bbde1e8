// Package agenttest runs a real skiff server (server.Run on a real SQLite
// file, TLS on loopback) for the agent's integration tests, and gives them
// node and admin clients. Only tests import it: it is the one place where
// agent code meets the server package.
package agenttest
