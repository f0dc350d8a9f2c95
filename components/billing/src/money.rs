//! Money and dates as billing accepts them: amounts in minor units, ISO 4217
//! currency codes, calendar due dates, payment methods.

use serde::Serialize;

/// Largest amount accepted, in minor units (one billion major units).
pub const MAX_AMOUNT_CENTS: i64 = 100_000_000_000;

/// Active ISO 4217 currency codes.
const ISO_4217: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN \
BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD \
HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA \
MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF \
SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES \
VND VUV WST XAF XCD XOF XPF YER ZAR ZMW ZWG";

/// An amount in minor units, from 1 to [`MAX_AMOUNT_CENTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct AmountCents(i64);

impl AmountCents {
    /// The amount, if it is one billing accepts.
    pub fn new(cents: i64) -> Option<Self> {
        (1..=MAX_AMOUNT_CENTS)
            .contains(&cents)
            .then_some(Self(cents))
    }

    /// Minor units.
    pub fn get(self) -> i64 {
        self.0
    }
}

/// An active ISO 4217 currency code, upper case, exactly as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Currency(String);

impl Currency {
    /// The code, if it is an active ISO 4217 one.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        if raw.len() == 3 && ISO_4217.split_whitespace().any(|c| c == raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err("must be an ISO 4217 currency code such as EUR or USD")
        }
    }

    /// The code.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Currency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A calendar date from 2000-01-01 to 2999-12-31, written `YYYY-MM-DD`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DueDate(String);

impl DueDate {
    /// The date, if it exists on the calendar and is in range.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
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
        Ok(Self(raw.to_owned()))
    }

    /// The date as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How a payment was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentMethod {
    /// A card payment.
    Card,
    /// A bank transfer.
    BankTransfer,
    /// Cash.
    Cash,
    /// A cheque.
    Check,
    /// A direct debit.
    DirectDebit,
    /// Anything else.
    Other,
}

meridian_platform::serialize_as_str!(PaymentMethod);

impl PaymentMethod {
    const ALL: [Self; 6] = [
        Self::Card,
        Self::BankTransfer,
        Self::Cash,
        Self::Check,
        Self::DirectDebit,
        Self::Other,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Card => "card",
            Self::BankTransfer => "bank_transfer",
            Self::Cash => "cash",
            Self::Check => "check",
            Self::DirectDebit => "direct_debit",
            Self::Other => "other",
        }
    }

    /// Parses a wire name.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == raw)
            .ok_or("must be card, bank_transfer, cash, check, direct_debit or other")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_whole_minor_units_within_range() {
        assert_eq!(AmountCents::new(1).map(AmountCents::get), Some(1));
        assert!(AmountCents::new(MAX_AMOUNT_CENTS).is_some());
        for bad in [0, -1, MAX_AMOUNT_CENTS + 1] {
            assert_eq!(AmountCents::new(bad), None, "{bad}");
        }
    }

    #[test]
    fn iso_codes_are_accepted_and_others_refused() {
        assert_eq!(Currency::parse("EUR").unwrap().as_str(), "EUR");
        assert_eq!(Currency::parse("JPY").unwrap().as_str(), "JPY");
        for bad in ["eur", "EU", "EURO", "XXX", "ABC", "", " EUR"] {
            assert!(Currency::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn due_dates_must_exist_on_the_calendar() {
        for ok in ["2026-12-31", "2028-02-29", "2000-02-29"] {
            assert_eq!(DueDate::parse(ok).unwrap().as_str(), ok);
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
            assert!(DueDate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn payment_methods_are_a_closed_set() {
        for m in PaymentMethod::ALL {
            assert_eq!(PaymentMethod::parse(m.as_str()), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert!(PaymentMethod::parse("bitcoin").is_err());
    }
}
