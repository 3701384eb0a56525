// pion-check: an independent decoder for ratelab's RTCP wire formats, built on pion/rtcp.
//
//	pion-check decode < packets.hex   one RTCP datagram per line (hex) -> one JSON object per line
//	pion-check build                  packets built by pion itself, as JSON lines with their hex
//
// Used by crates/ratelab-live/tests/interop.rs; the test skips when Go or the module is missing.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/pion/rtcp"
)

func describe(p rtcp.Packet) map[string]any {
	out := map[string]any{}
	switch t := p.(type) {
	case *rtcp.TransportLayerCC:
		deltas := []int64{}
		for _, d := range t.RecvDeltas {
			deltas = append(deltas, d.Delta)
		}
		out["kind"] = "twcc"
		out["sender_ssrc"] = t.SenderSSRC
		out["media_ssrc"] = t.MediaSSRC
		out["base_seq"] = t.BaseSequenceNumber
		out["count"] = t.PacketStatusCount
		out["ref_time"] = t.ReferenceTime
		out["fb_count"] = t.FbPktCount
		out["deltas_us"] = deltas
	case *rtcp.CCFeedbackReport:
		blocks := []map[string]any{}
		for _, b := range t.ReportBlocks {
			metrics := [][]any{}
			for _, m := range b.MetricBlocks {
				metrics = append(metrics, []any{m.Received, uint8(m.ECN), m.ArrivalTimeOffset})
			}
			blocks = append(blocks, map[string]any{"ssrc": b.MediaSSRC, "begin_seq": b.BeginSequence, "metrics": metrics})
		}
		out["kind"] = "ccfb"
		out["sender_ssrc"] = t.SenderSSRC
		out["rts"] = t.ReportTimestamp
		out["blocks"] = blocks
	case *rtcp.ReceiverEstimatedMaximumBitrate:
		out["kind"] = "remb"
		out["sender_ssrc"] = t.SenderSSRC
		out["bitrate"] = t.Bitrate
		out["ssrcs"] = t.SSRCs
	default:
		out["kind"] = fmt.Sprintf("%T", p)
	}
	if b, err := p.Marshal(); err == nil {
		out["remarshal"] = hex.EncodeToString(b)
	} else {
		out["remarshal_error"] = err.Error()
	}
	return out
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func decode() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		raw, err := hex.DecodeString(line)
		if err != nil {
			emit(map[string]any{"error": "hex: " + err.Error()})
			continue
		}
		pkts, err := rtcp.Unmarshal(raw)
		if err != nil {
			emit(map[string]any{"error": err.Error()})
			continue
		}
		descs := []map[string]any{}
		for _, p := range pkts {
			descs = append(descs, describe(p))
		}
		emit(map[string]any{"packets": descs})
	}
}

func build() {
	// pion takes the TWCC header length from the caller: marshal once to learn it.
	twcc := &rtcp.TransportLayerCC{
		Header:             rtcp.Header{Padding: true, Count: rtcp.FormatTCC, Type: rtcp.TypeTransportSpecificFeedback},
		SenderSSRC:         1,
		MediaSSRC:          2,
		BaseSequenceNumber: 65534,
		PacketStatusCount:  3,
		ReferenceTime:      258,
		FbPktCount:         7,
		PacketChunks: []rtcp.PacketStatusChunk{&rtcp.StatusVectorChunk{
			Type:       rtcp.TypeTCCStatusVectorChunk,
			SymbolSize: rtcp.TypeTCCSymbolSizeTwoBit,
			SymbolList: []uint16{rtcp.TypeTCCPacketReceivedSmallDelta, rtcp.TypeTCCPacketNotReceived, rtcp.TypeTCCPacketReceivedLargeDelta, 0, 0, 0, 0},
		}},
		RecvDeltas: []*rtcp.RecvDelta{
			{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 1000},
			{Type: rtcp.TypeTCCPacketReceivedLargeDelta, Delta: -2000},
		},
	}
	if b, err := twcc.Marshal(); err == nil {
		twcc.Header.Length = uint16(len(b)/4 - 1)
	}
	ccfb := &rtcp.CCFeedbackReport{
		SenderSSRC: 0x11111111,
		ReportBlocks: []rtcp.CCFeedbackReportBlock{{
			MediaSSRC:     0x22222222,
			BeginSequence: 65535,
			MetricBlocks: []rtcp.CCFeedbackMetricBlock{
				{Received: true, ECN: 0, ArrivalTimeOffset: 512},
				{Received: false},
				{Received: true, ECN: 0, ArrivalTimeOffset: 0x1FFE},
			},
		}},
		ReportTimestamp: 0x00018000,
	}
	remb := &rtcp.ReceiverEstimatedMaximumBitrate{SenderSSRC: 0x01020304, Bitrate: 1000000, SSRCs: []uint32{0xAABBCCDD}}
	for _, p := range []rtcp.Packet{twcc, ccfb, remb} {
		b, err := p.Marshal()
		d := describe(p)
		if err != nil {
			d["error"] = err.Error()
		} else {
			d["hex"] = hex.EncodeToString(b)
		}
		emit(d)
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pion-check decode|build")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "decode":
		decode()
	case "build":
		build()
	default:
		fmt.Fprintln(os.Stderr, "usage: pion-check decode|build")
		os.Exit(2)
	}
}
