// The call page: per media flow one sending and one receiving RTCPeerConnection in this page,
// connected only through the link emulator (ratelab/browser/call.py drives it).
//
// ICE: neither PC is told the other's candidates. The sender gets one remote candidate, the
// emulator's address; the receiver learns the sender as peer-reflexive from the emulator's
// address when the first check arrives. So every datagram, both ways, crosses the emulator.
'use strict';
(function () {
  const flows = new Map();
  const samples = [];
  let timer = null;

  // mulberry32: a small seeded PRNG, so that frame n of a flow is the same in every run.
  function prng(seed) {
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // Synthetic source. complexity c in [0, 1]:
  //  - always: a fixed seeded texture (8x8-pixel blocks, random grey levels) and a "head"
  //    (ellipse) whose mouth opens and closes at 3 Hz and which sways by 1 % of the width;
  //  - the texture pans horizontally at c * width pixels per second;
  //  - round(12 c) coloured rectangles cross the frame at up to c * width pixels per second;
  //  - round(6 c^2) tiles (each a tenth of the width square) of fresh noise per frame at random
  //    places: content the encoder cannot predict from the previous frame (11 % of a 16:9 frame at c = 1).
  // Frame n depends only on (seed, n): c = 0 is a talking head, c = 1 high motion.
  function makeSource(cfg) {
    const W = cfg.width, H = cfg.height, c = Math.max(0, Math.min(1, cfg.complexity));
    const canvas = document.createElement('canvas');
    canvas.width = W; canvas.height = H;
    document.body.appendChild(canvas);
    const ctx = canvas.getContext('2d');
    const rnd = prng(cfg.seed);
    const tex = document.createElement('canvas');
    tex.width = 2 * W; tex.height = H;
    const tctx = tex.getContext('2d');
    for (let y = 0; y < H; y += 8) for (let x = 0; x < 2 * W; x += 8) {
      const g = 60 + Math.floor(rnd() * 140);
      tctx.fillStyle = `rgb(${g},${g},${Math.min(255, g + 20)})`;
      tctx.fillRect(x, y, 8, 8);
    }
    const nTiles = Math.round(6 * c * c), tile = Math.max(8, Math.round(W / 10));
    const noise = [];
    for (let k = 0; k < 8 && nTiles > 0; k++) {
      const t = document.createElement('canvas');
      t.width = tile; t.height = tile;
      const x = t.getContext('2d'), img = x.createImageData(tile, tile);
      for (let i = 0; i < img.data.length; i += 4) {
        img.data[i] = rnd() * 255; img.data[i + 1] = rnd() * 255; img.data[i + 2] = rnd() * 255; img.data[i + 3] = 255;
      }
      x.putImageData(img, 0, 0);
      noise.push(t);
    }
    const objs = [];
    for (let k = 0; k < Math.round(12 * c); k++) {
      objs.push({x: rnd() * W, y: rnd() * H, vx: (rnd() * 2 - 1) * c * W, vy: (rnd() * 2 - 1) * c * H,
                 w: W * (0.05 + 0.1 * rnd()), h: H * (0.05 + 0.1 * rnd()),
                 col: `hsl(${Math.floor(rnd() * 360)},70%,50%)`});
    }
    const fseed = cfg.seed ^ 0x9E3779B9;
    const mod = (a, m) => ((a % m) + m) % m;
    function draw(n) {
      const t = n / cfg.fps;
      const pan = mod(c * W * t, W);
      ctx.drawImage(tex, pan, 0, W, H, 0, 0, W, H);
      for (const o of objs) {
        const x = mod(o.x + o.vx * t, W + o.w) - o.w, y = mod(o.y + o.vy * t, H + o.h) - o.h;
        ctx.fillStyle = o.col; ctx.fillRect(x, y, o.w, o.h);
      }
      const fr = prng(fseed + n * 7919);
      for (let k = 0; k < nTiles; k++) {
        ctx.drawImage(noise[Math.floor(fr() * noise.length)], fr() * (W - tile), fr() * (H - tile));
      }
      const cx = W / 2 + 0.01 * W * Math.sin(2 * Math.PI * 0.5 * t), cy = H / 2;
      ctx.fillStyle = '#d9a066';
      ctx.beginPath(); ctx.ellipse(cx, cy, W * 0.12, H * 0.3, 0, 0, 2 * Math.PI); ctx.fill();
      ctx.fillStyle = '#402010';
      const open = 0.5 + 0.5 * Math.sin(2 * Math.PI * 3 * t);
      ctx.beginPath(); ctx.ellipse(cx, cy + H * 0.15, W * 0.04, H * (0.005 + 0.04 * open), 0, 0, 2 * Math.PI); ctx.fill();
      ctx.fillRect(cx - W * 0.06, cy - H * 0.08, W * 0.03, H * 0.03);
      ctx.fillRect(cx + W * 0.03, cy - H * 0.08, W * 0.03, H * 0.03);
    }
    const stream = canvas.captureStream(0);
    const track = stream.getVideoTracks()[0];
    let t0 = null, last = -1, handle = null;
    function tick() {
      const now = performance.now();
      if (t0 === null) t0 = now;
      const n = Math.floor((now - t0) * cfg.fps / 1000);
      if (n !== last) { last = n; draw(n); track.requestFrame(); }
      handle = setTimeout(tick, Math.max(0, t0 + (n + 1) * 1000 / cfg.fps - performance.now()));
    }
    return {track, start: tick, stop: () => { clearTimeout(handle); track.stop(); canvas.remove(); }};
  }

  async function cameraSource(cfg) {
    // --use-file-for-fake-video-capture: the y4m file is the fake camera.
    const stream = await navigator.mediaDevices.getUserMedia({video: {width: cfg.width, height: cfg.height, frameRate: cfg.fps}});
    const track = stream.getVideoTracks()[0];
    return {track, start: () => {}, stop: () => track.stop()};
  }

  function gathered(pc) {
    return new Promise((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve();
      pc.addEventListener('icegatheringstatechange', () => { if (pc.iceGatheringState === 'complete') resolve(); });
    });
  }

  const noCandidates = (sdp) => sdp.split('\r\n').filter((l) => !l.startsWith('a=candidate') && !l.startsWith('a=end-of-candidates')).join('\r\n');

  // x-google-{start,min,max}-bitrate on every video codec of the answer: what the sender's
  // bandwidth estimator starts from and is bounded by (libwebrtc reads them from the remote SDP).
  function withBitrates(sdp, cfg) {
    const parts = [];
    if (cfg.start_kbps) parts.push(`x-google-start-bitrate=${Math.round(cfg.start_kbps)}`);
    if (cfg.min_kbps) parts.push(`x-google-min-bitrate=${Math.round(cfg.min_kbps)}`);
    if (cfg.max_kbps) parts.push(`x-google-max-bitrate=${Math.round(cfg.max_kbps)}`);
    if (!parts.length) return sdp;
    const lines = sdp.split('\r\n'), pts = new Set(), out = [];
    for (const l of lines) {
      const m = /^a=rtpmap:(\d+) (VP8|VP9|AV1|H264)\//.exec(l);
      if (m) pts.add(m[1]);
    }
    const seen = new Set();
    for (const l of lines) {
      const m = /^a=fmtp:(\d+) (.*)$/.exec(l);
      if (m && pts.has(m[1])) { out.push(`${l};${parts.join(';')}`); seen.add(m[1]); continue; }
      out.push(l);
      const r = /^a=rtpmap:(\d+) /.exec(l);
      if (r && pts.has(r[1]) && !lines.some((x) => x.startsWith(`a=fmtp:${r[1]} `))) out.push(`a=fmtp:${r[1]} ${parts.join(';')}`);
    }
    return out.join('\r\n');
  }

  const host = (c) => {
    const f = c.split(' ');
    return {ip: f[4], port: Number(f[5]), protocol: f[2].toLowerCase(), type: f[7]};
  };

  // Build flow cfg.id's two PCs and negotiate without exchanging candidates; returns the host
  // candidates each gathered (the emulator's routes are made of them).
  async function setup(cfg) {
    const S = new RTCPeerConnection({iceServers: []}), R = new RTCPeerConnection({iceServers: []});
    const cands = {sender: [], receiver: []};
    S.onicecandidate = (e) => { if (e.candidate && e.candidate.candidate) cands.sender.push(host(e.candidate.candidate)); };
    R.onicecandidate = (e) => { if (e.candidate && e.candidate.candidate) cands.receiver.push(host(e.candidate.candidate)); };
    const src = cfg.source === 'camera' ? await cameraSource(cfg) : makeSource(cfg);
    const tr = S.addTransceiver(src.track, {direction: 'sendonly'});
    if (cfg.codec) {
      const caps = RTCRtpSender.getCapabilities('video').codecs;
      const want = caps.filter((c) => c.mimeType.toLowerCase() === 'video/' + cfg.codec.toLowerCase());
      if (!want.length) throw new Error(`codec ${cfg.codec} is not in this browser (has: ${[...new Set(caps.map((c) => c.mimeType.slice(6)))].join(', ')})`);
      // Repair codecs kept unless the options leave them out: RTX (retransmissions on their own
      // SSRC; without it NACKed packets go again on the media SSRC) and RED/ULPFEC/FlexFEC.
      const repair = (c) => {
        const m = c.mimeType.toLowerCase();
        if (m.endsWith('/rtx')) return cfg.rtx !== false;
        if (/\/(red|ulpfec|flexfec-03)$/.test(m)) return cfg.fec !== false;
        return false;
      };
      tr.setCodecPreferences(want.concat(caps.filter(repair)));
    }
    const offer = await S.createOffer();
    await S.setLocalDescription(offer);
    await gathered(S);
    await R.setRemoteDescription({type: 'offer', sdp: noCandidates(offer.sdp)});
    const answer = await R.createAnswer();
    await R.setLocalDescription(answer);
    await gathered(R);
    await S.setRemoteDescription({type: 'answer', sdp: withBitrates(noCandidates(answer.sdp), cfg)});
    if (cfg.max_kbps) {
      const p = tr.sender.getParameters();
      if (!p.encodings || !p.encodings.length) p.encodings = [{}];
      p.encodings[0].maxBitrate = Math.round(cfg.max_kbps * 1000);
      await tr.sender.setParameters(p);
    }
    const ufrag = /a=ice-ufrag:(\S+)/.exec(answer.sdp)[1];
    flows.set(cfg.id, {S, R, src, tr, ufrag, mid: tr.mid, cfg, active: false});
    return cands;
  }

  // Give the sender its only remote candidate (normally the emulator's address) and start media.
  async function connect(id, ip, port) {
    const f = flows.get(id);
    f.src.start();
    await f.S.addIceCandidate({candidate: `candidate:1 1 udp 2122260223 ${ip} ${port} typ host`, sdpMid: f.mid, usernameFragment: f.ufrag});
    f.active = true;
  }

  const state = (id) => { const f = flows.get(id); return {sender: f.S.connectionState, receiver: f.R.connectionState}; };

  // The selected candidate pair of each PC, with its local and remote candidate.
  async function selected(id) {
    const f = flows.get(id), out = {};
    for (const [name, pc] of [['sender', f.S], ['receiver', f.R]]) {
      const st = await pc.getStats();
      let pair = null, srtp = null;
      st.forEach((r) => { if (r.type === 'transport' && r.selectedCandidatePairId) { pair = st.get(r.selectedCandidatePairId); srtp = r.srtpCipher || null; } });
      if (!pair) st.forEach((r) => { if (r.type === 'candidate-pair' && r.nominated && r.state === 'succeeded') pair = r; });
      if (!pair) { out[name] = null; continue; }
      const l = st.get(pair.localCandidateId), r = st.get(pair.remoteCandidateId);
      out[name] = {local: {ip: l.address, port: l.port, type: l.candidateType}, remote: {ip: r.address, port: r.port, type: r.candidateType},
                   nominated: !!pair.nominated, state: pair.state, srtp_cipher: srtp};
    }
    return out;
  }

  const pick = (r, keys) => { const o = {}; for (const k of keys) if (r[k] !== undefined) o[k] = r[k]; return o; };
  const OUT = ['bytesSent', 'headerBytesSent', 'packetsSent', 'retransmittedBytesSent', 'retransmittedPacketsSent', 'targetBitrate',
               'framesEncoded', 'keyFramesEncoded', 'framesSent', 'frameWidth', 'frameHeight', 'framesPerSecond', 'qualityLimitationReason',
               'qualityLimitationDurations', 'nackCount', 'pliCount', 'firCount', 'encoderImplementation', 'totalEncodeTime', 'qpSum',
               'psnrSum', 'psnrMeasurements', 'hugeFramesSent'];
  const IN = ['bytesReceived', 'headerBytesReceived', 'packetsReceived', 'packetsLost', 'framesDecoded', 'framesDropped', 'framesReceived',
              'keyFramesDecoded', 'freezeCount', 'totalFreezesDuration', 'frameWidth', 'frameHeight', 'framesPerSecond', 'jitter',
              'jitterBufferDelay', 'jitterBufferEmittedCount', 'nackCount', 'pliCount', 'firCount', 'decoderImplementation', 'totalDecodeTime'];
  const PAIR = ['bytesSent', 'bytesReceived', 'packetsSent', 'packetsReceived', 'availableOutgoingBitrate', 'currentRoundTripTime'];

  // One sample of a flow: the sender's outbound-rtp (primary SSRC), its selected pair and the
  // remote-inbound-rtp; the receiver's inbound-rtp and selected pair.
  async function sample(id) {
    const f = flows.get(id);
    const [ss, rs] = await Promise.all([f.S.getStats(), f.R.getStats()]);
    const out = {flow: id, t_ms: Date.now()};
    const pairOf = (st) => { let p = null; st.forEach((r) => { if (r.type === 'transport' && r.selectedCandidatePairId) p = st.get(r.selectedCandidatePairId); }); return p; };
    ss.forEach((r) => {
      if (r.type === 'outbound-rtp' && r.kind === 'video') {
        out.out = pick(r, OUT);
        const c = r.codecId && ss.get(r.codecId);
        if (c) out.out.codec = c.mimeType.replace(/^video\//, '');
      }
      if (r.type === 'media-source' && r.kind === 'video') out.source = pick(r, ['frames', 'framesPerSecond', 'width', 'height']);
      if (r.type === 'remote-inbound-rtp' && r.kind === 'video') out.remote_in = pick(r, ['roundTripTime', 'packetsLost', 'fractionLost', 'jitter']);
    });
    rs.forEach((r) => { if (r.type === 'inbound-rtp' && r.kind === 'video') out.in = pick(r, IN); });
    const sp = pairOf(ss), rp = pairOf(rs);
    if (sp) out.spair = pick(sp, PAIR);
    if (rp) out.rpair = pick(rp, PAIR);
    return out;
  }

  async function poll() {
    const ids = [...flows.keys()].filter((id) => flows.get(id).active);
    try { for (const s of await Promise.all(ids.map(sample))) samples.push(s); } catch (e) { samples.push({error: String(e)}); }
  }

  function startSampling(ms) { if (!timer) timer = setInterval(poll, ms); }
  const drain = () => samples.splice(0, samples.length);

  // Stop a flow's media and take a last sample of it; the PCs stay open until close().
  async function finish(id) {
    const f = flows.get(id);
    if (!f || !f.active) return null;
    const last = await sample(id);
    f.active = false;
    f.src.stop();
    return last;
  }

  function close() {
    if (timer) clearInterval(timer);
    timer = null;
    for (const f of flows.values()) { f.src.stop(); f.S.close(); f.R.close(); }
  }

  window.ratelab = {setup, connect, state, selected, startSampling, drain, finish, close};
})();
