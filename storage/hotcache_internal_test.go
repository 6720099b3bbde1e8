package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

func hotChange(name string, typ EventType, rev int64, size int) *change {
	return &change{rev: rev, typ: typ, key: key{resource: "configmaps", namespace: "default", name: name}, value: []byte(strings.Repeat("v", size)),
		haveSets: true, fields: map[string]string{watchIndexField: "node-" + name}}
}

// TestHotCacheBounds checks the FIFO: the oldest insertion goes first,
// a key written again is not evicted by its older slot, the byte bound
// holds, deletes and oversized values are not kept.
func TestHotCacheBounds(t *testing.T) {
	c := newHotCache(3, 1<<20)
	has := func(names ...string) {
		t.Helper()
		var got []string
		for _, n := range []string{"a", "b", "c", "d", "e", "big"} {
			if _, _, ok := c.get(key{resource: "configmaps", namespace: "default", name: n}); ok {
				got = append(got, n)
			}
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("cached %v; want %v", got, names)
		}
	}
	c.remember([]*change{hotChange("a", Added, 1, 10), hotChange("b", Added, 2, 10), hotChange("c", Added, 3, 10)})
	has("a", "b", "c")
	c.remember([]*change{hotChange("a", Modified, 4, 10)}) // a's first slot is now stale
	has("a", "b", "c")
	c.remember([]*change{hotChange("d", Added, 5, 10)}) // evicts the stale slot, then b
	has("a", "c", "d")
	if _, rev, _ := c.get(key{resource: "configmaps", namespace: "default", name: "a"}); rev != 4 {
		t.Errorf("a at revision %d; want 4", rev)
	}
	c.remember([]*change{hotChange("c", Deleted, 6, 10)})
	has("a", "d")
	c.remember([]*change{hotChange("big", Added, 7, 1<<20/16+1)})
	has("a", "d")
	c.forget([]*op{{kind: opUpdate, enc: &encoded{key: key{resource: "configmaps", namespace: "default", name: "a"}}}})
	has("d")

	small := newHotCache(100, 100)
	for i := range 10 {
		small.remember([]*change{hotChange(fmt.Sprint("k", i), Added, int64(i+1), 6)})
		if small.bytes > 100 {
			t.Fatalf("after %d values of 6 bytes: %d bytes cached; want at most 100", i+1, small.bytes)
		}
	}
	if got := small.len(); got != 10 {
		t.Errorf("%d of 10 small values cached; want 10", got)
	}
	small.remember([]*change{hotChange("k10", Added, 11, 6)}) // 66 bytes: still under the bound
	small.remember([]*change{hotChange("k11", Added, 12, 6)})
	if small.len() != 12 {
		t.Errorf("%d cached; want 12", small.len())
	}
	if node, ok := small.node(key{resource: "configmaps", namespace: "default", name: "k11"}); !ok || node != "node-k11" {
		t.Errorf("node of k11 = %q, %v; want node-k11", node, ok)
	}
	noSets := hotChange("k12", Added, 13, 6)
	noSets.haveSets = false
	small.remember([]*change{noSets})
	if _, _, ok := small.get(noSets.key); ok {
		t.Error("a change without its field set was cached; its node would be unknown")
	}
}

// TestHotReads runs the store's reads against the cache: a write is read
// back at once and from memory, a failed write and a delete are not, a
// returned value is the reader's own copy, and a store with the cache
// turned off reads the database.
func TestHotReads(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := func(name string) (string, int64, error) {
		t.Helper()
		obj, err := s.Get(ctx, "configmaps", "default", name)
		if err != nil {
			return "", 0, err
		}
		cm := obj.(*api.ConfigMap)
		rev, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		return cm.Data["n"], rev, nil
	}
	cm := fixtures.ConfigMap("default", "x", map[string]string{"n": "1"})
	if err := s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	if n, _, err := read("x"); err != nil || n != "1" {
		t.Fatalf("Get after Create = %q, %v; want 1", n, err)
	}
	if got := s.Stats(); got.HotHits != before.HotHits+1 {
		t.Errorf("hot hits %d -> %d after reading what was just written; want one more", before.HotHits, got.HotHits)
	}

	cm.Data["n"] = "2"
	if err := s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	n, rev, err := read("x")
	if err != nil || n != "2" || strconv.FormatInt(rev, 10) != cm.ResourceVersion {
		t.Fatalf("Get after Update = %q at %d, %v; want 2 at %s", n, rev, err, cm.ResourceVersion)
	}

	// A stale precondition fails its op; the other op of the batch commits.
	stale := fixtures.ConfigMap("default", "x", map[string]string{"n": "stale"})
	stale.ResourceVersion = "1"
	other := fixtures.ConfigMap("default", "y", map[string]string{"n": "y"})
	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	other.Data["n"] = "y2"
	errs := s.UpdateBatch(ctx, []api.Object{stale, other})
	if !errors.Is(errs[0], ErrConflict) || errs[1] != nil {
		t.Fatalf("UpdateBatch(stale, fresh) = %v; want a conflict, then nil", errs)
	}
	if n, got, err := read("x"); err != nil || n != "2" || got != rev {
		t.Errorf("Get after a conflicting update = %q at %d, %v; want 2 at %d", n, got, err, rev)
	}
	if n, _, _ := read("y"); n != "y2" {
		t.Errorf("Get(y) = %q; want y2", n)
	}

	// A transaction that fails as a whole leaves the committed value.
	setMaxPages(t, s, 0)
	big := fixtures.ConfigMap("default", "x", map[string]string{"n": "3", "data": strings.Repeat("x", 64<<10)})
	big.ResourceVersion = cm.ResourceVersion
	if err := s.Update(ctx, big); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Update on a full database = %v; want ErrNoSpace", err)
	}
	if n, got, err := read("x"); err != nil || n != "2" || got != rev {
		t.Errorf("Get after a failed transaction = %q at %d, %v; want 2 at %d", n, got, err, rev)
	}
	setMaxPages(t, s, 1<<20)

	value, _, err := s.GetRaw(ctx, "configmaps", "default", "x")
	if err != nil {
		t.Fatal(err)
	}
	clear(value)
	if n, _, err := read("x"); err != nil || n != "2" {
		t.Errorf("Get after the caller overwrote a value it read = %q, %v; want 2", n, err)
	}

	if _, err := s.Delete(ctx, "configmaps", "default", "x", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete = %v; want ErrNotFound", err)
	}

	off, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "off.db"), HotObjects: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if err := off.Create(ctx, fixtures.ConfigMap("default", "x", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := off.Get(ctx, "configmaps", "default", "x"); err != nil {
		t.Fatal(err)
	}
	if st := off.Stats(); st.HotHits != 0 || st.HotMisses != 0 || off.hot != nil {
		t.Errorf("store with HotObjects -1: %d hits, %d misses; want no cache", st.HotHits, st.HotMisses)
	}
}

// setMaxPages limits the writer's database to its current pages plus
// extra (TestSQLiteNoSpace's way to fill a disk).
func setMaxPages(t *testing.T, s *Store, extra int64) {
	t.Helper()
	err := s.submit(context.Background(), &op{kind: opTask, task: func(ctx context.Context, w *writer) error {
		var pages int64
		if err := w.conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
			return err
		}
		_, err := w.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+extra))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHotReadsLinearizable reads keys while they are written: a read that
// starts after a write was acknowledged, or after the database showed
// it, must see it (or a later one), and every value read must carry the
// revision it was read at.
func TestHotReadsLinearizable(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), HotObjects: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const keys, writes = 8, 150
	acked := make([]atomic.Int64, keys)
	for k := range keys {
		cm := fixtures.ConfigMap("default", fmt.Sprint("k", k), map[string]string{"n": "0"})
		if err := s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		rev, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		acked[k].Store(rev)
	}
	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	var failed atomic.Bool
	for k := range keys {
		writers.Go(func() {
			for i := 1; i <= writes && !failed.Load(); i++ {
				obj, err := s.GuaranteedUpdate(ctx, "configmaps", "default", fmt.Sprint("k", k), func(cur api.Object) (api.Object, error) {
					cm := cur.(*api.ConfigMap)
					cm.Data = map[string]string{"n": strconv.Itoa(i)}
					return cm, nil
				})
				if err != nil {
					t.Error(err)
					failed.Store(true)
					return
				}
				rev, _ := strconv.ParseInt(obj.GetObjectMeta().ResourceVersion, 10, 64)
				acked[k].Store(rev)
			}
		})
	}
	for r := range 4 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := (i + r) % keys
				floor := acked[k].Load()
				// Half the reads first read the database itself: what
				// it shows, the cache must not take back.
				if i%2 == 0 {
					var v []byte
					var dbRev int64
					if err := s.rs.get.QueryRowContext(ctx, "configmaps", "default", fmt.Sprint("k", k)).Scan(&v, &dbRev); err != nil {
						t.Error(err)
						failed.Store(true)
						return
					}
					floor = max(floor, dbRev)
				}
				value, rev, err := s.GetRaw(ctx, "configmaps", "default", fmt.Sprint("k", k))
				switch {
				case err != nil:
					t.Error(err)
				case rev < floor:
					t.Errorf("k%d read at revision %d after %d was acknowledged or read from the database", k, rev, floor)
				case !strings.Contains(string(value), fmt.Sprintf(`"resourceVersion":"%d"`, rev)):
					t.Errorf("k%d read at revision %d holds another: %s", k, rev, value)
				default:
					continue
				}
				failed.Store(true)
				return
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if st := s.Stats(); st.HotHits == 0 {
		t.Errorf("no read was answered from the cache (%d misses)", st.HotMisses)
	}
}
