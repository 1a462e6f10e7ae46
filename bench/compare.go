package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// report is everything one comparison run measured.
type report struct {
	Started, Finished time.Time
	Quick             bool
	N                 int
	Records1K         int64
	Records100B       int64
	E2ERecords        int
	KafkaHeap         string
	Machine           map[string]string
	Versions          map[string]string
	LoadStart         string
	LoadEnd           string
	Scenarios         []scenario
	// Results[scenario id][broker] has one entry per repetition.
	Results  map[string]map[kind][]result
	Startup  map[kind][]float64 // seconds from exec to first Metadata response
	IdleRSS  map[kind][]int64
	PeakRSS  map[kind][]int64
	Warnings []string
}

func runComparison(ctx context.Context, s settings, tmp string) (*report, error) {
	rp := &report{
		Started: time.Now(), Quick: s.Quick, N: s.N, Records1K: s.Records1K, Records100B: s.Records100,
		E2ERecords: s.E2ERecords, KafkaHeap: s.KafkaHeap, LoadStart: loadAvg(),
		Results: map[string]map[kind][]result{},
		Startup: map[kind][]float64{}, IdleRSS: map[kind][]int64{}, PeakRSS: map[kind][]int64{},
	}
	rp.Machine = machineInfo(tmp)
	rp.Versions = versions(s)
	rp.Scenarios = scenarios(s)
	if len(rp.Scenarios) == 0 {
		return nil, fmt.Errorf("no scenario matches BENCH_SCENARIOS")
	}
	for _, sc := range rp.Scenarios {
		rp.Results[sc.ID] = map[kind][]result{}
	}
	mode := "full"
	if s.Quick {
		mode = "quick"
	}
	log.Printf("%s mode, %d repetition(s), %d scenarios, load average %s, temp dir %s",
		mode, s.N, len(rp.Scenarios), rp.LoadStart, tmp)

	for rep := 0; rep < s.N; rep++ {
		if err := runRep(ctx, s, tmp, rep, rp); err != nil {
			return nil, err
		}
	}
	rp.Finished = time.Now()
	rp.LoadEnd = loadAvg()
	return rp, nil
}

func runRep(ctx context.Context, s settings, tmp string, rep int, rp *report) error {
	order := []kind{kafka, kgo}
	if rep%2 == 1 {
		order = []kind{kgo, kafka}
	}
	brokers := map[kind]*broker{}
	defer func() {
		for _, b := range brokers {
			b.stop()
		}
	}()
	for _, k := range order {
		b, err := newBroker(s, k, filepath.Join(tmp, fmt.Sprintf("r%d-%s", rep, k)))
		if err != nil {
			return err
		}
		if err := b.format(ctx, s); err != nil {
			return err
		}
		if err := b.start(ctx, s); err != nil {
			b.stop()
			return err
		}
		brokers[k] = b
		rp.Startup[k] = append(rp.Startup[k], b.StartSeconds)
		rp.IdleRSS[k] = append(rp.IdleRSS[k], b.IdleRSS)
		log.Printf("rep %d: %s up on %s in %.2fs, idle RSS %.0f MiB", rep+1, k.Title(), b.Addr, b.StartSeconds, mib(b.IdleRSS))
	}
	others := func(k kind) []*broker {
		var out []*broker
		for kk, b := range brokers {
			if kk != k {
				out = append(out, b)
			}
		}
		return out
	}
	// Warm-up (not reported): the JVM's JIT and both brokers' buffers get a
	// first pass at the produce path.
	warm := scenario{ID: "warmup", Kind: "produce", Size: 1024, Acks: "1", Parts: 8, Records: max(s.Records1K/4, 5000)}
	for _, k := range order {
		r := runScenario(ctx, s, warm, rep, brokers[k], others(k))
		if !r.OK {
			log.Printf("rep %d: warm-up on %s: %s", rep+1, k.Title(), r.NA)
		}
	}

	for _, sc := range rp.Scenarios {
		for _, k := range order {
			if err := ctx.Err(); err != nil {
				return err
			}
			r := runScenario(ctx, s, sc, rep, brokers[k], others(k))
			rp.Results[sc.ID][k] = append(rp.Results[sc.ID][k], r)
			logResult(rep, sc, k, r)
			if !brokers[k].alive() {
				return fmt.Errorf("%s exited during %s; log %s:\n%s", k.Title(), sc.ID, brokers[k].LogPath, tail(brokers[k].LogPath, 30))
			}
		}
	}
	for _, k := range order {
		if st, err := readProc(brokers[k].Pid()); err == nil {
			rp.PeakRSS[k] = append(rp.PeakRSS[k], st.HWM)
		}
	}
	for _, k := range order {
		brokers[k].stop()
		if !s.Keep {
			_ = os.RemoveAll(brokers[k].Dir)
		}
	}
	brokers = nil
	return nil
}

func logResult(rep int, sc scenario, k kind, r result) {
	if !r.OK {
		log.Printf("rep %d %-22s %-12s %s", rep+1, sc.ID, k.Title(), r.NA)
		return
	}
	switch sc.Kind {
	case "e2e":
		log.Printf("rep %d %-22s %-12s avg %.3f ms p50 %g p99 %g p99.9 %g ms; cpu %.2fs; others %.2f cores",
			rep+1, sc.ID, k.Title(), r.AvgMs, r.P50, r.P99, r.P999, r.CPU, r.Foreign)
	default:
		log.Printf("rep %d %-22s %-12s %.0f rec/s %.2f MB/s p50 %g p99 %g p99.9 %g ms; cpu %.2fs (%.1f s/GB); %.1fs; others %.2f cores",
			rep+1, sc.ID, k.Title(), r.RecPerSec, r.MBPerSec, r.P50, r.P99, r.P999, r.CPU, r.CPUPerGB(), r.Wall, r.Foreign)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
