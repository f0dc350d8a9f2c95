//! Money and dates as billing accepts them: amounts in minor units, ISO 4217
//! currency codes, calendar due dates, payment methods.

/// Largest amount accepted, in minor units (one billion major units).
pub const MAX_AMOUNT_CENTS: i64 = 100_000_000_000;

/// Active ISO 4217 currency codes.
const ISO_4217: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN \
BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD \
HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA \
MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF \
SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES \
VND VUV WST XAF XCD XOF XPF YER ZAR ZMW ZWG";

/// An ISO 4217 code, upper case.
pub fn currency(raw: &str) -> Result<String, &'static str> {
    let code = raw.trim();
    if code.len() == 3 && ISO_4217.split_whitespace().any(|c| c == code) {
        Ok(code.to_owned())
    } else {
        Err("must be an ISO 4217 currency code such as EUR or USD")
    }
}

/// A calendar date `YYYY-MM-DD` (years 2000–2999).
pub fn due_date(raw: &str) -> Result<String, &'static str> {
    const ERR: &str = "must be a date written YYYY-MM-DD";
    let parts: Vec<&str> = raw.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(ERR);
    };
    if y.len() != 4
        || m.len() != 2
        || d.len() != 2
        || !raw.bytes().all(|b| b.is_ascii_digit() || b == b'-')
    {
        return Err(ERR);
    }
    let (year, month, day): (u32, u32, u32) = (
        y.parse().map_err(|_| ERR)?,
        m.parse().map_err(|_| ERR)?,
        d.parse().map_err(|_| ERR)?,
    );
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(ERR),
    };
    if !(2000..=2999).contains(&year) || day == 0 || day > days {
        return Err(ERR);
    }
    Ok(raw.to_owned())
}

/// How a payment was made.
pub fn payment_method(raw: &str) -> Result<String, &'static str> {
    match raw {
        "card" | "bank_transfer" | "cash" | "check" | "direct_debit" | "other" => {
            Ok(raw.to_owned())
        }
        _ => Err("must be card, bank_transfer, cash, check, direct_debit or other"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_codes_are_accepted_and_others_refused() {
        assert_eq!(currency("EUR"), Ok("EUR".into()));
        assert_eq!(currency("JPY"), Ok("JPY".into()));
        for bad in ["eur", "EU", "EURO", "XXX", "ABC", ""] {
            assert!(currency(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn due_dates_must_exist_on_the_calendar() {
        for ok in ["2026-12-31", "2028-02-29", "2000-02-29"] {
            assert_eq!(due_date(ok), Ok(ok.into()));
        }
        for bad in [
            "2026-02-29",
            "2100-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-1-1",
            "26-01-01",
            "2026-01-32",
            "tomorrow",
            "2026-01-01T00:00:00Z",
            "1999-12-31",
        ] {
            assert!(due_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn payment_methods_are_a_closed_set() {
        assert!(payment_method("card").is_ok());
        assert!(payment_method("bitcoin").is_err());
    }
}
