package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/cmd/skiff/internal/printers"
	"github.com/skiffhq/skiff/server"
)

// tokensPath is the admin endpoint for join tokens.
const tokensPath = "/api/v1/skiff/tokens"

var tokenHelp = cmdHelp{
	usage: "skiff token create [--ttl 24h] [--description D]\n  skiff token list\n  skiff token delete ID...",
	about: `Manage the tokens agents join the cluster with.

create prints a new token on standard output (and on standard error the
command that joins a machine with it). Tokens expire after --ttl (0s: never).
list shows every token but never its secret; delete revokes tokens by ID.
These endpoints need the admin token.`,
	examples: `  skiff token create --ttl 2h --description "rack 4"
  skiff token list
  skiff token delete 8f3k2a`,
}

func runToken(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		return usageError{"expected a subcommand: create, list or delete\nSee 'skiff token -h'."}
	}
	switch args[0] {
	case "create":
		return runTokenCreate(ctx, env, args[1:])
	case "list", "ls":
		return runTokenList(ctx, env, args[1:])
	case "delete", "rm":
		return runTokenDelete(ctx, env, args[1:])
	case "-h", "--help", "help":
		printHelp(env.stdout, newFlagSet("token"), tokenHelp)
		return nil
	}
	return usageError{fmt.Sprintf("unknown token subcommand %q (want create, list or delete)", args[0])}
}

func runTokenCreate(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("token create")
	var f clientFlags
	f.register(fs, false)
	ttl := fs.Duration("ttl", server.DefaultJoinTokenTTL, "lifetime of the token; 0s never expires")
	desc := fs.String("description", "", "free text shown by 'skiff token list'")
	servers := fs.String("servers", "", "comma list of server URLs the token carries for agents (default: the client's --server list when it names several)")
	pos, err := parseArgs(env, fs, tokenHelp, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("skiff token create takes no arguments, got %q", pos)}
	}
	if *ttl < 0 {
		return usageError{fmt.Sprintf("--ttl %v must not be negative", *ttl)}
	}
	c, cfg, err := f.client(env)
	if err != nil {
		return err
	}
	// The token carries these servers for agents (client.SplitJoinToken).
	list := client.Servers(*servers)
	if list == nil {
		if own := client.Servers(cfg.Server); len(own) > 1 {
			list = own
		}
	}
	if list != nil {
		if err := client.ValidateJoinTokenServers(list); err != nil {
			return usageError{fmt.Sprintf("--servers: %v", err)}
		}
	}
	var info server.TokenInfo
	req := server.CreateTokenRequest{TTL: ttl.String(), Description: *desc}
	if err := c.DoJSON(ctx, http.MethodPost, tokensPath, req, &info); err != nil {
		return err
	}
	if info.Token == "" {
		return fmt.Errorf("the server created token %q but sent no secret", info.ID)
	}
	if info.Token, err = client.JoinTokenWithServers(info.Token, list); err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, info.Token)
	expires := "never expires"
	if info.Expires != nil {
		expires = "expires " + info.Expires.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(env.stderr, "Join token %s created (%s). Join a machine with:\n  skiff agent --server %s --token %s\n",
		info.ID, expires, cfg.Server, info.Token)
	return nil
}

func runTokenList(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("token list")
	var f clientFlags
	f.register(fs, false)
	pos, err := parseArgs(env, fs, tokenHelp, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("skiff token list takes no arguments, got %q", pos)}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	var list server.TokenList
	if err := c.DoJSON(ctx, http.MethodGet, tokensPath, nil, &list); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(env.stderr, "No join tokens found")
		return nil
	}
	// Oldest first; the server's order is by random ID.
	slices.SortStableFunc(list.Items, func(a, b server.TokenInfo) int {
		if c := timeOrZero(a.Created).Compare(timeOrZero(b.Created)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	now := env.now()
	tw := tabwriter.NewWriter(env.stdout, 6, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tTTL\tEXPIRES\tUSAGE\tDESCRIPTION")
	for _, t := range list.Items {
		ttl, exp := "<forever>", "<never>"
		if t.Expires != nil {
			exp = t.Expires.UTC().Format(time.RFC3339)
			if left := t.Expires.Sub(now); left > 0 {
				ttl = printers.HumanDuration(left)
			} else {
				ttl = "<expired>"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, ttl, exp, dash(t.Usage), dash(oneLine(t.Description)))
	}
	return tw.Flush()
}

func runTokenDelete(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("token delete")
	var f clientFlags
	f.register(fs, false)
	pos, err := parseArgs(env, fs, tokenHelp, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"give the IDs of the tokens to delete (see 'skiff token list')"}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	failed := false
	for _, id := range pos {
		if err := c.DoJSON(ctx, http.MethodDelete, tokensPath+"/"+url.PathEscape(id), nil, nil); err != nil {
			printError(env, err)
			failed = true
			continue
		}
		fmt.Fprintf(env.stdout, "join token %q deleted\n", id)
	}
	if failed {
		return errReported
	}
	return nil
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// dash stands in for an empty cell.
func dash(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// oneLine keeps a table cell on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
