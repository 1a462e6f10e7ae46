package protocol

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Round trips through Client and Server on one pipelined connection.
func BenchmarkClientServerMetadata(b *testing.B) {
	s := &Server{Logger: zap.NewNop()}
	addr, _ := startServerB(b, s)
	c, err := Dial(context.Background(), addr, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := metadataFor("t")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := *req
			if _, err := c.Request(context.Background(), &r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkDecodeProduce(b *testing.B) {
	prod := kmsg.NewPtrProduceRequest()
	prod.Acks = -1
	prod.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3, Records: make([]byte, 16<<10)}}}}
	prod.SetVersion(11)
	frame := append(headerBytes(0, 11, 1, kmsg.StringPtr("bench"), true), prod.AppendTo(nil)...)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(frame, nil); err != nil {
			b.Fatal(err)
		}
	}
}
