package main

import (
	"context"
	"fmt"
	"iter"
	"log"
	"maps"
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
	Waited   time.Duration // BENCH_WAIT_QUIET: time spent waiting for a quiet machine
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
			waitQuiet(ctx, s, rp, maps.Values(brokers))
			if sc.Kind == "rate" {
				// Half of what Kafka reached in this repetition's gen run (Kafka
				// runs it before or after kgo-broker: the latest result).
				if rs := rp.Results[sc.RateOf][kafka]; len(rs) > 0 && rs[len(rs)-1].OK {
					sc.Rate = rs[len(rs)-1].RecPerSec * sc.RatePct / 100
				}
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

// waitQuiet (BENCH_WAIT_QUIET=<seconds>) waits before a run until the other
// processes on the machine use less than 0.25 cores over 2 s, spending at most
// that many seconds in total over the whole benchmark.
func waitQuiet(ctx context.Context, s settings, rp *report, brokers iter.Seq[*broker]) {
	if s.WaitQuiet <= 0 {
		return
	}
	for rp.Waited < s.WaitQuiet && ctx.Err() == nil {
		var bs []*broker
		for b := range brokers {
			bs = append(bs, b)
		}
		own := func() float64 {
			c := selfCPU()
			for _, b := range bs {
				if st, err := readProc(b.Pid()); err == nil {
					c += st.CPU
				}
			}
			return c
		}
		sys0, own0, t0 := systemBusy(), own(), time.Now()
		time.Sleep(2 * time.Second)
		el := time.Since(t0)
		foreign := (systemBusy() - sys0 - (own() - own0)) / el.Seconds()
		if foreign < 0.25 {
			return
		}
		rp.Waited += el
		if rp.Waited >= s.WaitQuiet {
			log.Printf("BENCH_WAIT_QUIET: waited %v in total for a quiet machine; running regardless from now on", rp.Waited.Round(time.Second))
		}
	}
}

func logResult(rep int, sc scenario, k kind, r result) {
	if !r.OK {
		log.Printf("rep %d %-22s %-12s %s", rep+1, sc.ID, k.Title(), r.NA)
		return
	}
	switch sc.Kind {
	case "consume", "fetch":
		log.Printf("rep %d %-22s %-12s %.0f rec/s %.2f MB/s; cpu %.2fs (%.1f s/GB); %.1fs; others %.2f cores",
			rep+1, sc.ID, k.Title(), r.RecPerSec, r.MBPerSec, r.CPU, r.CPUPerGB(), r.Wall, r.Foreign)
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
