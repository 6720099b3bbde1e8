package serverload

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

var (
	bigConfigMaps = flag.Int("serverload.configmaps", 500000, "ConfigMaps written into the store BenchmarkServerRestartBigStore restarts on")
	bigIdle       = flag.Duration("serverload.bigidle", 6*time.Minute, "how long BenchmarkServerRestartBigStore lets the restarted server idle before reading its RSS")
)

// fillConfigMaps writes n ConfigMaps of about 100 bytes of data each
// straight through the storage package into the store at path, from 8
// writers (the store group-commits them).
func fillConfigMaps(tb testing.TB, path string, n int) {
	tb.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Options{Path: path, CompactInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	value := strings.Repeat("x", 100)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				cm := &api.ConfigMap{
					TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("cm-%07d", i), Namespace: "ns-" + strconv.Itoa(i%50), Labels: map[string]string{"app": "bulk"}},
					Data:       map[string]string{"config": value},
				}
				if err := st.Create(ctx, cm); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		tb.Fatal(err)
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
}

// rssParts reads VmRSS, RssAnon, RssFile and VmHWM (peak RSS) of the
// server in kB.
func (p *serverProc) rssParts() (rss, anon, file, hwm int64) {
	p.tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		p.tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS":
			rss = parseKB(p.tb, v)
		case "RssAnon":
			anon = parseKB(p.tb, v)
		case "RssFile":
			file = parseKB(p.tb, v)
		case "VmHWM":
			hwm = parseKB(p.tb, v)
		}
	}
	return rss, anon, file, hwm
}

// BenchmarkServerRestartBigStore: a real `skiff server` restarted on a
// store holding -serverload.configmaps ConfigMaps (500 000 by default,
// written straight through the storage package), left idle for
// -serverload.bigidle (6 minutes: past the first compaction of the
// change log, whose entries must be 5 minutes old), then its RSS read. The budget is 100 MiB
// plus 0.5 KiB per stored object.
func BenchmarkServerRestartBigStore(b *testing.B) {
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		p := startServer(b, dir)
		p.stop()
		db := filepath.Join(dir, "server", "state.db")
		t0 := time.Now()
		fillConfigMaps(b, db, *bigConfigMaps)
		b.Logf("wrote %d ConfigMaps in %v", *bigConfigMaps, time.Since(t0))
		if fi, err := os.Stat(db); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "store-MiB")
		}
		t0 = time.Now()
		p = startServer(b, dir)
		b.ReportMetric(time.Since(t0).Seconds(), "ready-s")
		time.Sleep(*bigIdle)
		rss, anon, file, hwm := p.rssParts()
		b.ReportMetric(float64(hwm)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(rss)/1024, "RSS-MiB")
		b.ReportMetric(float64(anon)/1024, "RssAnon-MiB")
		b.ReportMetric(float64(file)/1024, "RssFile-MiB")
		b.ReportMetric(100+float64(*bigConfigMaps)*0.5/1024, "budget-MiB")
		p.stop()
	}
}
