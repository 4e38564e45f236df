import COpenSSL

/// scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`. Synchronous and slow by design: callers on an
/// event loop go through `PasswordHasher`, which runs it on `KDFThreadPool`.
public enum Scrypt {
    /// The `keyLength`-byte key scrypt derives from `password` and `salt` with N = 2^logN, r and p.
    /// Memory and cost are not capped here (RFC vectors use tiny N); `PasswordHasher` caps stored ones.
    public static func deriveKey(
        password: [UInt8],
        salt: [UInt8],
        logN: Int,
        r: Int,
        p: Int,
        keyLength: Int
    ) throws(CryptoError) -> [UInt8] {
        guard logN >= 1, logN < 63, r >= 1, p >= 1, keyLength >= 1 else {
            throw CryptoError("scrypt: invalid parameters (ln=\(logN), r=\(r), p=\(p), key \(keyLength) B)")
        }
        let n = UInt64(1) << UInt64(logN)
        // B (128·r·p) + V (128·r·(N+2)) plus slack; OpenSSL refuses to run past `maxmem`.
        let (vBytes, overflow) = UInt64(128 * r).multipliedReportingOverflow(by: n + 2)
        guard !overflow else { throw CryptoError("scrypt: parameters overflow memory") }
        let maxMemory = vBytes + UInt64(128 * r * p) + 65_536
        var key = [UInt8](repeating: 0, count: keyLength)
        let rc = password.withUnsafeBufferPointer { passwordBytes in
            salt.withUnsafeBufferPointer { saltBytes in
                key.withUnsafeMutableBufferPointer { keyBytes in
                    passwordBytes.withMemoryRebound(to: CChar.self) { passwordChars in
                        EVP_PBE_scrypt(
                            passwordChars.baseAddress, passwordChars.count,
                            saltBytes.baseAddress, saltBytes.count,
                            n, UInt64(r), UInt64(p), maxMemory,
                            keyBytes.baseAddress, keyBytes.count
                        )
                    }
                }
            }
        }
        guard rc == 1 else { throw CryptoError.openSSL("scrypt (EVP_PBE_scrypt)") }
        return key
    }

    /// `deriveKey` with `parameters.logN`, `r`, `p` and `keyLength`.
    public static func deriveKey(
        password: [UInt8],
        salt: [UInt8],
        parameters: PasswordHasher.Parameters
    ) throws(CryptoError) -> [UInt8] {
        try deriveKey(
            password: password,
            salt: salt,
            logN: parameters.logN,
            r: parameters.r,
            p: parameters.p,
            keyLength: parameters.keyLength
        )
    }
}
