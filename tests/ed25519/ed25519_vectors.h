// Loads the Ed25519 test vectors of tests/data/vectors (RFC 8032 section 7.1
// and Wycheproof ed25519_test.json) for the host and GPU suites. The files
// are scanned for "key": "value" pairs in order, which is all these two
// layouts need; a missing or truncated file yields no vectors and the tests
// that use them fail on the count.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

struct Ed25519Vector {
    int id = 0;
    std::string name;
    std::vector<uint8_t> pk, msg, sig;
    bool valid = false;
};

inline std::vector<uint8_t> ed25519_unhex(const std::string &h)
{
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back((uint8_t)std::stoul(h.substr(i, 2), nullptr, 16));
    return out;
}

inline std::string ed25519_vector_dir()
{
    const char *env = std::getenv("ZAP_TEST_DATA_DIR");
    if (env != nullptr && env[0] != '\0')
        return env;
    return ZAP_ED25519_VECTOR_DIR;
}

inline std::string ed25519_read_file(const std::string &path)
{
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Wycheproof: each group's "pk" precedes its tests; each test has tcId, msg,
// sig and result (in that order in the file).
inline std::vector<Ed25519Vector> ed25519_load_wycheproof()
{
    std::string text = ed25519_read_file(ed25519_vector_dir() + "/wycheproof_ed25519_test.json");
    std::regex kv("\"(pk|tcId|msg|sig|result)\"\\s*:\\s*(\"([^\"]*)\"|([0-9]+))");
    std::vector<Ed25519Vector> out;
    std::vector<uint8_t> pk;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kv); it != std::sregex_iterator();
         ++it) {
        std::string key = (*it)[1], sval = (*it)[3], nval = (*it)[4];
        if (key == "pk") {
            pk = ed25519_unhex(sval);
        } else if (key == "tcId") {
            Ed25519Vector v;
            v.id = std::atoi(nval.c_str());
            v.name = "tcId " + nval;
            v.pk = pk;
            out.push_back(v);
        } else if (!out.empty()) {
            if (key == "msg")
                out.back().msg = ed25519_unhex(sval);
            else if (key == "sig")
                out.back().sig = ed25519_unhex(sval);
            else if (key == "result")
                out.back().valid = sval == "valid";
        }
    }
    return out;
}

inline std::vector<Ed25519Vector> ed25519_load_rfc8032()
{
    std::string text = ed25519_read_file(ed25519_vector_dir() + "/rfc8032_ed25519.json");
    std::regex kv("\"(name|public_key|message|signature)\"\\s*:\\s*\"([^\"]*)\"");
    std::vector<Ed25519Vector> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kv); it != std::sregex_iterator();
         ++it) {
        std::string key = (*it)[1], val = (*it)[2];
        if (key == "name") {
            Ed25519Vector v;
            v.name = val;
            v.valid = true;
            v.id = (int)out.size();
            out.push_back(v);
        } else if (!out.empty()) {
            if (key == "public_key")
                out.back().pk = ed25519_unhex(val);
            else if (key == "message")
                out.back().msg = ed25519_unhex(val);
            else if (key == "signature")
                out.back().sig = ed25519_unhex(val);
        }
    }
    return out;
}

// Seed for the differential sets: ZAP_ED25519_SEED if set, else a fixed one
// (CI is reproducible; set the variable to explore).
inline uint64_t ed25519_test_seed()
{
    const char *env = std::getenv("ZAP_ED25519_SEED");
    return env != nullptr ? std::strtoull(env, nullptr, 0) : 0x5eed25519ULL;
}

inline uint64_t ed25519_env_u64(const char *name, uint64_t dflt)
{
    const char *env = std::getenv(name);
    return env != nullptr && env[0] != '\0' ? std::strtoull(env, nullptr, 0) : dflt;
}
