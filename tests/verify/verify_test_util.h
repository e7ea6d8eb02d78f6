// Helpers shared by the verify suites: seeded batches and the vectors files.
#pragma once
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <gtest/gtest.h>
extern "C" {
#include "zap/verify.h"
#include "verify/batch_gen.h"
}

struct GenBatch {
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> expected;
    std::vector<uint8_t> kinds;
};

inline GenBatch make_batch(uint64_t n, double invalid, uint64_t seed, int variable, uint32_t keys = 7)
{
    zap_gen_params_t p = {};
    p.items = n;
    p.keys = keys;
    p.invalid_fraction = invalid;
    p.seed = seed;
    p.variable = variable;
    p.max_msg_len = 300;
    p.threads = 2;
    p.batch_id = seed;
    zap_batch_layout_t l;
    EXPECT_EQ(zap_gen_layout(&p, &l), ZAP_OK);
    GenBatch b;
    b.bytes.assign(l.total_bytes, 0);
    b.expected.assign((n + 31) / 32 + 1, 0);
    b.kinds.assign(n + 1, 0);
    EXPECT_EQ(zap_gen_batch(&p, b.bytes.data(), b.bytes.size(), b.expected.data(), b.kinds.data()), ZAP_OK);
    b.expected.resize((n + 31) / 32);
    b.kinds.resize(n);
    std::printf("[ seed %llu ] batch of %llu items, invalid fraction %.2f, %s messages\n",
                (unsigned long long)seed, (unsigned long long)n, invalid, variable ? "variable" : "fixed");
    return b;
}

inline std::string read_text(const std::string &path)
{
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline std::vector<uint8_t> unhex(const std::string &h)
{
    std::vector<uint8_t> out(h.size() / 2);
    for (size_t i = 0; i < out.size(); i++)
        out[i] = (uint8_t)std::stoul(h.substr(2 * i, 2), nullptr, 16);
    return out;
}

// One Ed25519 vector: key, message, signature and the expected verdict.
struct Vec {
    std::string name;
    std::vector<uint8_t> pk, msg, sig;
    bool valid;
};

// The value of the next "key": "..." string at or after pos; npos if none.
inline size_t next_field(const std::string &s, const std::string &key, size_t pos, std::string *val)
{
    size_t k = s.find("\"" + key + "\"", pos);
    if (k == std::string::npos)
        return k;
    size_t q1 = s.find('"', s.find(':', k) + 1);
    size_t q2 = s.find('"', q1 + 1);
    *val = s.substr(q1 + 1, q2 - q1 - 1);
    return q2 + 1;
}

// RFC 8032 section 7.1 (all valid).
inline std::vector<Vec> load_rfc8032()
{
    std::string s = read_text(std::string(ZAP_TEST_VECTORS_DIR) + "/rfc8032_ed25519.json");
    std::vector<Vec> out;
    size_t pos = 0;
    std::string name, pk, msg, sig;
    while ((pos = next_field(s, "name", pos, &name)) != std::string::npos) {
        pos = next_field(s, "public_key", pos, &pk);
        pos = next_field(s, "message", pos, &msg);
        pos = next_field(s, "signature", pos, &sig);
        out.push_back({name, unhex(pk), unhex(msg), unhex(sig), true});
    }
    return out;
}

// Wycheproof ed25519_test.json: groups carry publicKey.pk, tests carry
// tcId, msg, sig, result (the fields come in that order).
inline std::vector<Vec> load_wycheproof()
{
    std::string s = read_text(std::string(ZAP_TEST_VECTORS_DIR) + "/wycheproof_ed25519_test.json");
    std::vector<Vec> out;
    std::string pk;
    size_t pos = 0;
    for (;;) {
        size_t g = s.find("\"publicKey\"", pos), t = s.find("\"tcId\"", pos);
        if (t == std::string::npos)
            break;
        if (g != std::string::npos && g < t) {
            pos = next_field(s, "pk", g, &pk);
            continue;
        }
        size_t colon = s.find(':', t);
        std::string id = s.substr(colon + 1, s.find(',', colon) - colon - 1);
        std::string msg, sig, result;
        pos = next_field(s, "msg", t, &msg);
        pos = next_field(s, "sig", pos, &sig);
        pos = next_field(s, "result", pos, &result);
        out.push_back({"tcId" + id, unhex(pk), unhex(msg), unhex(sig), result == "valid"});
    }
    return out;
}
