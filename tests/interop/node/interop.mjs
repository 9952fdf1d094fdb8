// Cross-implementation test: a Node.js gRPC client (@grpc/grpc-js + @grpc/proto-loader, loading
// our .proto files) calls the real pqcd, and every answer is checked against @noble/post-quantum
// (an independent FIPS 203/204 implementation) and @noble/hashes.
//
//   PQCD_TARGET=127.0.0.1:50051 PQCD_PROTO_DIR=proto [PQCD_INTEROP_CASES=200] node interop.mjs
//
// Exit status 0 when every case matched, 1 on any mismatch or error.
import { randomBytes } from 'node:crypto';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { ml_kem512, ml_kem768, ml_kem1024 } from '@noble/post-quantum/ml-kem.js';
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js';
import { XWing } from '@noble/post-quantum/hybrid.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { p256, p384 } from '@noble/curves/nist.js';
import { sha3_224, sha3_256, sha3_384, sha3_512, shake128, shake256 } from '@noble/hashes/sha3.js';
import { sha224, sha256, sha384, sha512, sha512_224, sha512_256 } from '@noble/hashes/sha2.js';

const target = process.env.PQCD_TARGET ?? '127.0.0.1:50051';
const protoDir = process.env.PQCD_PROTO_DIR ?? 'proto';
const CASES = Number(process.env.PQCD_INTEROP_CASES ?? 200);
const PARALLEL = 16;

const def = protoLoader.loadSync(['pqc/v1/crypto.proto'], {
  includeDirs: [protoDir],
  keepCase: true,
  enums: Number,
  longs: String,
  defaults: true,
  oneofs: true,
});
const pqc = grpc.loadPackageDefinition(def).pqc.v1;
const client = new pqc.Crypto(target, grpc.credentials.createInsecure(), {
  'grpc.max_receive_message_length': 64 << 20,
});
const call = (method, req) =>
  new Promise((resolve, reject) =>
    client[method](req, { deadline: Date.now() + 30000 }, (err, resp) =>
      err ? reject(new Error(`${method}: ${err.code} ${err.details}`)) : resolve(resp)));

// Algorithm numbers of pqc.v1.Algorithm.
const ALG = {
  'ML-KEM-512': 1, 'ML-KEM-768': 2, 'ML-KEM-1024': 3,
  'ML-DSA-44': 10, 'ML-DSA-65': 11, 'ML-DSA-87': 12,
  'SHA3-224': 20, 'SHA3-256': 21, 'SHA3-384': 22, 'SHA3-512': 23, SHAKE128: 24, SHAKE256: 25,
  'SHA2-256': 40, 'SHA2-384': 41, 'SHA2-512': 42, 'SHA2-224': 43, 'SHA2-512/224': 44,
  'SHA2-512/256': 45,
  X25519MLKEM768: 50, SecP256r1MLKEM768: 51, SecP384r1MLKEM1024: 52, 'X-Wing': 53,
};

let failures = 0;
const counts = {};
const hex = (b) => Buffer.from(b).toString('hex');
function check(group, ok, what) {
  counts[group] ??= { passed: 0, failed: 0 };
  if (ok) {
    counts[group].passed++;
  } else {
    counts[group].failed++;
    if (++failures <= 20) console.error(`MISMATCH ${group}: ${what}`);
  }
}
const eq = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

async function inParallel(n, fn) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      try {
        await fn(i);
      } catch (e) {
        failures++;
        console.error(`ERROR case ${i}: ${e.message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

async function kem(name, noble) {
  const alg = ALG[name];
  await inParallel(CASES, async (i) => {
    const seed = randomBytes(64);
    const ours = await call('KeyGen', { algorithm: alg, seed });
    const theirs = noble.keygen(seed);
    check(`${name} keygen(seed)`, eq(ours.public_key, theirs.publicKey) &&
          eq(ours.private_key, theirs.secretKey), `case ${i} seed ${hex(seed)}`);
    // noble encapsulates to our public key; our Decaps must find the same secret.
    const { cipherText, sharedSecret } = noble.encapsulate(ours.public_key);
    const dec = await call('Decaps', { algorithm: alg, private_key: ours.private_key,
                                       ciphertext: cipherText });
    check(`${name} noble encaps -> our decaps`, eq(dec.shared_secret, sharedSecret), `case ${i}`);
    // Our Encaps; noble decapsulates.
    const en = await call('Encaps', { algorithm: alg, public_key: ours.public_key });
    check(`${name} our encaps -> noble decaps`,
          eq(noble.decapsulate(en.ciphertext, theirs.secretKey), en.shared_secret), `case ${i}`);
  });
}

// A TLS hybrid from noble's parts: ML-KEM and an ECDH curve, concatenated in the draft's order
// (mlFirst: ML-KEM first, as X25519MLKEM768; else the curve first, as the NIST curves).
function tlsHybrid(mlkem, curve, mlFirst) {
  const isX = curve === x25519;
  const skLen = isX ? 32 : curve === p256 ? 32 : 48;
  const ptLen = isX ? 32 : curve === p256 ? 65 : 97;
  const mlPk = mlkem === ml_kem768 ? 1184 : 1568;
  const mlCt = mlkem === ml_kem768 ? 1088 : 1568;
  const cat = (ml, ec) => Buffer.concat(mlFirst ? [ml, ec] : [ec, ml]);
  const split = (b, mlLen) => {
    b = Buffer.from(b);
    return mlFirst ? [b.subarray(0, mlLen), b.subarray(mlLen)]
                   : [b.subarray(b.length - mlLen), b.subarray(0, b.length - mlLen)];
  };
  const pub = (sk) => (isX ? x25519.getPublicKey(sk) : curve.getPublicKey(sk, false));
  const dh = (sk, pk) => (isX ? x25519.getSharedSecret(sk, pk)
                              : curve.getSharedSecret(sk, pk, true).subarray(1));
  const ecKey = () => {
    for (;;) {  // a NIST scalar must be in [1, n-1]; random bytes nearly always are
      const sk = randomBytes(skLen);
      try { pub(sk); return sk; } catch { /* out of range: draw again */ }
    }
  };
  return {
    seedLen: 64 + skLen,
    newSeed() { return cat(randomBytes(64), ecKey()); },
    keygen(seed) {
      const [mlSeed, ecSk] = split(seed, 64);
      const ml = mlkem.keygen(mlSeed);
      return { publicKey: cat(ml.publicKey, pub(ecSk)), ml, ecSk };
    },
    encapsulate(pk) {
      const [mlPkPart, ecPk] = split(pk, mlPk);
      const ml = mlkem.encapsulate(mlPkPart);
      const eph = ecKey();
      return { cipherText: cat(ml.cipherText, pub(eph)),
               sharedSecret: cat(ml.sharedSecret, dh(eph, ecPk)) };
    },
    decapsulate(ct, keys) {
      const [mlCtPart, ecCt] = split(ct, mlCt);
      return cat(mlkem.decapsulate(mlCtPart, keys.ml.secretKey), dh(keys.ecSk, ecCt));
    },
  };
}

// Both roles of a hybrid: noble encapsulates to our key and we decapsulate (the TLS server's
// share, answered by the client), and the other way round.
async function hybrid(name, h) {
  const alg = ALG[name];
  await inParallel(CASES, async (i) => {
    const seed = h.newSeed();
    const ours = await call('KeyGen', { algorithm: alg, seed });
    const theirs = h.keygen(seed);
    check(`${name} keygen(seed)`, eq(ours.public_key, theirs.publicKey), `case ${i} seed ${hex(seed)}`);
    const { cipherText, sharedSecret } = h.encapsulate(ours.public_key);
    const dec = await call('Decaps', { algorithm: alg, private_key: ours.private_key,
                                       ciphertext: cipherText });
    check(`${name} noble encaps -> our decaps`, eq(dec.shared_secret, sharedSecret), `case ${i}`);
    const en = await call('Encaps', { algorithm: alg, public_key: ours.public_key });
    check(`${name} our encaps -> noble decaps`,
          eq(h.decapsulate(en.ciphertext, theirs), en.shared_secret), `case ${i}`);
  });
}

// X-Wing: noble's own implementation; its secret key is the 32-byte seed.
const xwing = {
  newSeed: () => randomBytes(32),
  keygen: (seed) => ({ ...XWing.keygen(seed), seed }),
  encapsulate: (pk) => XWing.encapsulate(pk),
  decapsulate: (ct, keys) => XWing.decapsulate(ct, keys.seed),
};

async function dsa(name, noble) {
  const alg = ALG[name];
  await inParallel(CASES, async (i) => {
    const seed = randomBytes(32);
    const ours = await call('KeyGen', { algorithm: alg, seed });
    const theirs = noble.keygen(seed);
    check(`${name} keygen(seed)`, eq(ours.public_key, theirs.publicKey) &&
          eq(ours.private_key, theirs.secretKey), `case ${i} seed ${hex(seed)}`);
    const msg = randomBytes(i % 97);
    const context = randomBytes(i % 5 === 0 ? 0 : i % 33);
    // Deterministic ML-DSA: byte-for-byte equal to noble's, and valid there.
    const sig = await call('Sign', { algorithm: alg, private_key: ours.private_key, message: msg,
                                     context, deterministic: true });
    const nobleSig = noble.sign(msg, theirs.secretKey, { context, extraEntropy: false });
    check(`${name} deterministic sign == noble`, eq(sig.signature, nobleSig), `case ${i}`);
    check(`${name} our sig verifies in noble`,
          noble.verify(sig.signature, msg, theirs.publicKey, { context }), `case ${i}`);
    // noble's hedged signature verifies here; a modified one does not.
    const hedged = noble.sign(msg, theirs.secretKey, { context });
    const v = await call('Verify', { algorithm: alg, public_key: ours.public_key, message: msg,
                                     signature: hedged, context });
    check(`${name} noble sig verifies here`, v.valid === true, `case ${i}`);
    if (i % 10 === 0) {
      const bad = Buffer.from(hedged);
      bad[i % bad.length] ^= 1;
      const vb = await call('Verify', { algorithm: alg, public_key: ours.public_key, message: msg,
                                        signature: bad, context });
      check(`${name} tampered sig rejected`, vb.valid === false, `case ${i}`);
    }
  });
}

async function hashes() {
  const fixed = [
    ['SHA3-224', sha3_224], ['SHA3-256', sha3_256], ['SHA3-384', sha3_384], ['SHA3-512', sha3_512],
    ['SHA2-224', sha224], ['SHA2-256', sha256], ['SHA2-384', sha384], ['SHA2-512', sha512],
    ['SHA2-512/224', sha512_224], ['SHA2-512/256', sha512_256],
  ];
  for (const [name, fn] of fixed) {
    await inParallel(CASES, async (i) => {
      const data = randomBytes((i * 37) % 700);
      const r = await call('Hash', { algorithm: ALG[name], data });
      check(`${name}`, eq(r.digest, fn(data)), `case ${i} len ${data.length}`);
    });
  }
  for (const [name, fn] of [['SHAKE128', shake128], ['SHAKE256', shake256]]) {
    await inParallel(CASES, async (i) => {
      const data = randomBytes((i * 53) % 500);
      const len = 1 + ((i * 13) % 300);
      const r = await call('Hash', { algorithm: ALG[name], data, output_length: len });
      check(`${name}`, eq(r.digest, fn(data, { dkLen: len })), `case ${i} out ${len}`);
    });
  }
}

const start = Date.now();
await kem('ML-KEM-512', ml_kem512);
await kem('ML-KEM-768', ml_kem768);
await kem('ML-KEM-1024', ml_kem1024);
await hybrid('X25519MLKEM768', tlsHybrid(ml_kem768, x25519, true));
await hybrid('SecP256r1MLKEM768', tlsHybrid(ml_kem768, p256, false));
await hybrid('SecP384r1MLKEM1024', tlsHybrid(ml_kem1024, p384, false));
await hybrid('X-Wing', xwing);
await dsa('ML-DSA-44', ml_dsa44);
await dsa('ML-DSA-65', ml_dsa65);
await dsa('ML-DSA-87', ml_dsa87);
await hashes();
client.close();

for (const [group, c] of Object.entries(counts)) {
  console.log(`[interop] ${group}: passed ${c.passed}, failed ${c.failed}`);
}
const total = Object.values(counts).reduce((a, c) => a + c.passed, 0);
console.log(`[interop] ${total} checks passed, ${failures} failures, ` +
            `${((Date.now() - start) / 1000).toFixed(1)} s against ${target}`);
if (total === 0) failures++;
process.exit(failures === 0 ? 0 : 1);
