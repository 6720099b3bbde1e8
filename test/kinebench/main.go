package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func main() {
	kine := flag.String("kine", "", "kine binary (required)")
	writers := flag.Int("writers", 64, "concurrent writers")
	n := flag.Int("n", 20000, "creates per run")
	rounds := flag.Int("rounds", 2, "rounds (skiff then kine in each)")
	flag.Parse()
	if err := run(*kine, *writers, *n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "kinebench:", err)
		os.Exit(1)
	}
}

func run(kine string, writers, n, rounds int) error {
	if kine == "" {
		return errors.New("-kine is required")
	}
	c, err := pgtest.New(pgtest.Options{Fsync: true})
	if err != nil {
		return err
	}
	defer c.Remove() //nolint:errcheck // a temporary cluster
	for r := range rounds {
		db, err := c.NewDatabase()
		if err != nil {
			return err
		}
		rate, err := runSkiff(c.URL(db), writers, n)
		if err != nil {
			return fmt.Errorf("skiff: %w", err)
		}
		fmt.Printf("round %d skiff  %6.0f creates/s\n", r+1, rate)
		if db, err = c.NewDatabase(); err != nil {
			return err
		}
		rate, err = runKine(kine, c.URL(db), writers, n)
		if err != nil {
			return fmt.Errorf("kine: %w", err)
		}
		fmt.Printf("round %d kine   %6.0f creates/s\n", r+1, rate)
	}
	return nil
}

// spread runs n calls of fn over writers goroutines and returns the rate.
func spread(writers, n int, fn func(i int) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), first
}

func runSkiff(url string, writers, n int) (float64, error) {
	ctx := context.Background()
	s, err := storage.Open(ctx, storage.Options{Postgres: url})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return spread(writers, n, func(i int) error {
		return s.Create(ctx, storagetest.Pod("default", fmt.Sprint("p", i), map[string]string{"app": "bench"}))
	})
}

func runKine(bin, url string, writers, n int) (float64, error) {
	const addr = "127.0.0.1:23791"
	cmd := exec.Command(bin, "--endpoint", url, "--listen-address", addr, "--metrics-bind-address", "0")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Kill() //nolint:errcheck // done with it
		cmd.Wait()         //nolint:errcheck // as above
	}()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Get(cctx, "/registry/health")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("kine not ready in 60s: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return spread(writers, n, func(i int) error {
		p := storagetest.Pod("default", fmt.Sprint("p", i), map[string]string{"app": "bench"})
		p.APIVersion, p.Kind = "v1", "Pod"
		v, err := json.Marshal(p)
		if err != nil {
			return err
		}
		key := "/registry/pods/default/" + p.Name
		resp, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(v))).
			Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return fmt.Errorf("create %s: already exists", key)
		}
		return nil
	})
}
