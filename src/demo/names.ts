// Company names in each country's style (legal forms BV/NV/SRL, AS, AB, GmbH, SAS, S.r.l., ApS, Pty Ltd ...)
// for business cards, and fictional e-invoicing service provider names. All names are synthetic.
import type { Rng } from './prng.js';

interface Style {
  surnames: readonly string[];
  trades: readonly string[];
  places: readonly string[];
  /** templates: `{n}` is a built name, `{p}` a place; [template, weight] */
  forms: readonly (readonly [string, number])[];
}

const STYLES: Record<string, Style> = {
  BE: {
    surnames: ['Peeters', 'Janssens', 'Maes', 'Jacobs', 'Mertens', 'Willems', 'Claes', 'Goossens', 'Wouters', 'De Smet', 'Dubois', 'Lambert', 'Dupont', 'Martin', 'Simon', 'Laurent', 'Leroy', 'Renard', 'Hermans', 'Vermeulen', 'Van den Broeck', 'Lemmens', 'Michiels', 'Segers', 'Verhoeven', 'Desmet'],
    trades: ['Bouw', 'Dakwerken', 'Elektro', 'Schrijnwerkerij', 'Transport', 'Garage', 'Bakkerij', 'Boekhouding', 'Immo', 'Schilderwerken', 'Tuinaanleg', 'Boulangerie', 'Menuiserie', 'Transports', 'Cabinet', 'Toiture', 'Fiduciaire', 'Chauffage', 'Électricité', 'Carrosserie'],
    places: ['Vlaanderen', 'Kempen', 'Waasland', 'Limburg', 'Brabant', 'Wallonie', 'Ardennes', 'Hainaut', 'Liège', 'Gent', 'Antwerpen', 'Brugge', 'Namur', 'Leuven', 'Mechelen'],
    forms: [['{n} BV', 40], ['{n} SRL', 22], ['{n} NV', 10], ['{n} SA', 6], ['{n} CommV', 3], ['{n} VZW', 5], ['{n} ASBL', 4], ['Gemeente {p}', 2], ['Ville de {p}', 1]],
  },
  NO: {
    surnames: ['Hansen', 'Johansen', 'Olsen', 'Larsen', 'Andersen', 'Pedersen', 'Nilsen', 'Kristiansen', 'Jensen', 'Karlsen', 'Berg', 'Haugen', 'Hagen', 'Bakken', 'Lie', 'Solberg', 'Dahl', 'Moen'],
    trades: ['Bygg', 'Rør', 'Elektro', 'Transport', 'Regnskap', 'Eiendom', 'Maskin', 'Snekkeri', 'Entreprenør', 'Sjømat', 'Havbruk', 'Consulting', 'Anlegg'],
    places: ['Bergen', 'Trondheim', 'Stavanger', 'Tromsø', 'Nordland', 'Vestland', 'Fjord', 'Nordlys', 'Drammen', 'Fjell', 'Bodø', 'Ålesund'],
    forms: [['{n} AS', 80], ['{n} ASA', 3], ['{n} SA', 3], ['{p} kommune', 7], ['{n} ENK', 7]],
  },
  SE: {
    surnames: ['Andersson', 'Johansson', 'Karlsson', 'Nilsson', 'Eriksson', 'Larsson', 'Olsson', 'Persson', 'Svensson', 'Gustafsson', 'Lindqvist', 'Lindberg', 'Berglund', 'Sjöberg', 'Lundgren'],
    trades: ['Bygg', 'Fastigheter', 'Logistik', 'Måleri', 'El', 'VVS', 'Redovisning', 'Konsult', 'Snickeri', 'Åkeri', 'Verkstad'],
    places: ['Norrland', 'Svea', 'Uppsala', 'Göteborg', 'Malmö', 'Skåne', 'Dalarna', 'Värmland', 'Mälardalen', 'Västerås', 'Umeå'],
    forms: [['{n} AB', 85], ['{n} HB', 4], ['{p} kommun', 6], ['Region {p}', 2], ['{n} ek. för.', 3]],
  },
  NL: {
    surnames: ['De Jong', 'Jansen', 'De Vries', 'Van den Berg', 'Van Dijk', 'Bakker', 'Visser', 'Smit', 'Meijer', 'De Boer', 'Mulder', 'De Groot', 'Bos', 'Vos', 'Peters', 'Hendriks'],
    trades: ['Installatietechniek', 'Bouw', 'Transport', 'Bakkerij', 'Schilders', 'Adviesgroep', 'Accountants', 'Logistiek', 'Techniek', 'Groothandel', 'Hoveniers'],
    places: ['Holland', 'Utrecht', 'Brabant', 'Twente', 'Rijnmond', 'Zeeland', 'Amstel', 'Veluwe', 'Groningen', 'Limburg'],
    forms: [['{n} B.V.', 70], ['{n} V.O.F.', 6], ['{n} N.V.', 3], ['Stichting {n}', 8], ['Gemeente {p}', 4], ['{n}', 9]],
  },
  DK: {
    surnames: ['Jensen', 'Nielsen', 'Hansen', 'Pedersen', 'Andersen', 'Christensen', 'Larsen', 'Sørensen', 'Rasmussen', 'Jørgensen', 'Madsen', 'Kristensen'],
    trades: ['Byg', 'VVS', 'El', 'Transport', 'Tømrer', 'Maler', 'Rådgivning', 'Revision', 'Ejendomme', 'Logistik'],
    places: ['Nordsø', 'Jylland', 'Fyn', 'Sjælland', 'Aarhus', 'Odense', 'Aalborg', 'Østjysk', 'Vejle', 'Esbjerg'],
    forms: [['{n} ApS', 55], ['{n} A/S', 25], ['{n} I/S', 5], ['{p} Kommune', 7], ['Region {p}', 2], ['{n} IVS', 6]],
  },
  DE: {
    surnames: ['Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Schulz', 'Hoffmann', 'Koch', 'Richter', 'Klein', 'Wolf', 'Schröder'],
    trades: ['Haustechnik', 'Bau', 'Elektrotechnik', 'Logistik', 'Metallbau', 'Steuerberatung', 'Sanitär', 'Maschinenbau', 'Holzbau', 'Medizintechnik'],
    places: ['Köln', 'Bonn', 'Münster', 'Kassel', 'Freiburg', 'Augsburg', 'Bielefeld', 'Mainz', 'Rhein-Sieg', 'Ruhr', 'Franken', 'Allgäu'],
    forms: [['{n} GmbH', 55], ['{n} AG', 5], ['{n} GmbH & Co. KG', 12], ['{n} e.K.', 6], ['{n} UG (haftungsbeschränkt)', 5], ['Stadt {p}', 8], ['Landkreis {p}', 5], ['Gemeinde {p}', 4]],
  },
  FR: {
    surnames: ['Martin', 'Bernard', 'Dubois', 'Thomas', 'Robert', 'Richard', 'Petit', 'Durand', 'Leroy', 'Moreau', 'Simon', 'Laurent', 'Lefebvre', 'Michel', 'Garcia'],
    trades: ['Transports', 'Boulangerie', 'Menuiserie', 'Bâtiment', 'Électricité', 'Conseil', 'Plomberie', 'Logistique', 'Informatique', 'Immobilier'],
    places: ['Provence', 'Bretagne', 'Normandie', 'Alsace', 'Loire', 'Rhône', 'Aquitaine', 'Lyon', 'Lille', 'Nantes'],
    forms: [['{n} SAS', 45], ['{n} SARL', 30], ['{n} SA', 8], ['{n} EURL', 7], ['{n} SASU', 10]],
  },
  IT: {
    surnames: ['Rossi', 'Russo', 'Ferrari', 'Esposito', 'Bianchi', 'Romano', 'Colombo', 'Ricci', 'Marino', 'Greco', 'Bruno', 'Gallo', 'Conti', 'De Luca'],
    trades: ['Costruzioni', 'Impianti', 'Trasporti', 'Logistica', 'Servizi', 'Consulenze', 'Meccanica', 'Alimentari', 'Arredamenti'],
    places: ['Bologna', 'Verona', 'Bergamo', 'Padova', 'Brescia', 'Parma', 'Modena', 'Trento', 'Lombardia', 'Veneto', 'Toscana'],
    forms: [['{n} S.r.l.', 60], ['{n} S.p.A.', 10], ['{n} S.n.c.', 8], ['{n} S.a.s.', 7], ['Comune di {p}', 15]],
  },
  FI: {
    surnames: ['Virtanen', 'Korhonen', 'Mäkinen', 'Nieminen', 'Mäkelä', 'Hämäläinen', 'Laine', 'Heikkinen', 'Koskinen', 'Järvinen'],
    trades: ['Rakennus', 'Sähkö', 'Kuljetus', 'Putki', 'Kiinteistöt', 'Tilitoimisto', 'Konepaja', 'Puu'],
    places: ['Helsingin', 'Tampereen', 'Turun', 'Oulun', 'Espoon', 'Lapin', 'Savon', 'Karjalan'],
    forms: [['{n} Oy', 80], ['{n} Oyj', 5], ['{n} Ky', 5], ['{p} kaupunki', 10]],
  },
  AT: {
    surnames: ['Gruber', 'Huber', 'Bauer', 'Wagner', 'Pichler', 'Steiner', 'Moser', 'Mayer', 'Hofer', 'Leitner'],
    trades: ['Bau', 'Installationen', 'Transporte', 'Holzbau', 'Elektro', 'Steuerberatung'],
    places: ['Tirol', 'Steiermark', 'Kärnten', 'Salzburg', 'Wien', 'Donau', 'Alpen', 'Graz'],
    forms: [['{n} GmbH', 75], ['{n} KG', 10], ['{n} OG', 8], ['{n} AG', 7]],
  },
  AU: {
    surnames: ['Smith', 'Jones', 'Williams', 'Brown', 'Wilson', 'Taylor', 'Nguyen', 'Johnson', 'Martin', 'White', 'Anderson'],
    trades: ['Plumbing', 'Electrical', 'Logistics', 'Constructions', 'Accounting', 'Landscaping', 'Engineering', 'Freight', 'Building'],
    places: ['Coastal', 'Outback', 'Pacific', 'Harbour', 'Southern Cross', 'Murray', 'Sydney', 'Brisbane', 'Perth'],
    forms: [['{n} Pty Ltd', 85], ['{n} Ltd', 5], ['The {n} Family Trust', 10]],
  },
  SG: {
    surnames: ['Tan', 'Lim', 'Lee', 'Ng', 'Ong', 'Wong', 'Goh', 'Chua', 'Chan', 'Koh'],
    trades: ['Engineering', 'Trading', 'Logistics', 'Marine', 'Technologies', 'Holdings', 'Services', 'Supplies'],
    places: ['Lion City', 'Straits', 'Marina', 'Orchard', 'Jurong', 'Tampines'],
    forms: [['{n} Pte. Ltd.', 90], ['{n} LLP', 10]],
  },
  JP: {
    surnames: ['Yamada', 'Sato', 'Suzuki', 'Takahashi', 'Tanaka', 'Watanabe', 'Ito', 'Nakamura', 'Kobayashi', 'Kato'],
    trades: ['Shoji', 'Kogyo', 'Seisakusho', 'Denki', 'Kensetsu', 'Butsuryu', 'Trading', 'Foods'],
    places: ['Sakura', 'Fuji', 'Kanto', 'Kansai', 'Tokai', 'Nihon'],
    forms: [['{n} Co., Ltd.', 60], ['{n} K.K.', 25], ['{n} Inc.', 15]],
  },
  NZ: {
    surnames: ['Smith', 'Wilson', 'Williams', 'Brown', 'Taylor', 'Singh', 'Thompson', 'Walker', 'Ngata'],
    trades: ['Freight', 'Builders', 'Plumbing', 'Dairy', 'Electrical', 'Accounting', 'Motors'],
    places: ['Kiwi', 'Southern Alps', 'Waikato', 'Canterbury', 'Tasman', 'Aotearoa', 'Otago'],
    forms: [['{n} Limited', 90], ['{n} Ltd', 10]],
  },
  IE: {
    surnames: ['Murphy', 'Kelly', "O'Sullivan", 'Walsh', 'Smith', "O'Brien", 'Byrne', 'Ryan', "O'Connor", "O'Neill"],
    trades: ['Construction', 'Engineering', 'Logistics', 'Pharma', 'Consulting', 'Foods', 'Motors'],
    places: ['Atlantic', 'Emerald', 'Liffey', 'Shannon', 'Munster', 'Leinster', 'Connacht'],
    forms: [['{n} Limited', 60], ['{n} DAC', 15], ['{n} Unlimited Company', 5], ['{n} Ltd', 20]],
  },
  LU: {
    surnames: ['Schmit', 'Muller', 'Weber', 'Wagner', 'Hoffmann', 'Thill', 'Schmitz', 'Klein', 'Reuter'],
    trades: ['Services', 'Consulting', 'Construction', 'Finance', 'Logistique', 'Immobilière'],
    places: ['Moselle', 'Kirchberg', 'Ardennes', 'Alzette', 'Esch'],
    forms: [['{n} S.à r.l.', 60], ['{n} S.A.', 30], ['{n} SCS', 10]],
  },
  PL: {
    surnames: ['Nowak', 'Kowalski', 'Wiśniewski', 'Wójcik', 'Kowalczyk', 'Kamiński', 'Lewandowski', 'Zieliński'],
    trades: ['Budownictwo', 'Transport', 'Logistyka', 'Usługi', 'Serwis', 'Handel', 'Instalacje'],
    places: ['Mazowsze', 'Pomorze', 'Śląsk', 'Wisła', 'Bałtyk', 'Kraków'],
    forms: [['{n} Sp. z o.o.', 80], ['{n} S.A.', 10], ['{n} Sp.k.', 10]],
  },
  EE: {
    surnames: ['Tamm', 'Saar', 'Sepp', 'Mägi', 'Kask', 'Kukk', 'Rebane', 'Ilves'],
    trades: ['Ehitus', 'Transport', 'Logistika', 'Metall', 'Puit', 'Konsultatsioonid', 'IT'],
    places: ['Tallinna', 'Tartu', 'Pärnu', 'Balti', 'Viru', 'Harju'],
    forms: [['{n} OÜ', 85], ['{n} AS', 15]],
  },
  GB: {
    surnames: ['Smith', 'Jones', 'Taylor', 'Brown', 'Williams', 'Wilson', 'Evans', 'Thomas', 'Roberts', 'Walker'],
    trades: ['Joinery', 'Building', 'Logistics', 'Engineering', 'Consulting', 'Plumbing', 'Electrical'],
    places: ['Thames', 'Pennine', 'Cotswold', 'Mersey', 'Northern', 'Albion', 'Wessex'],
    forms: [['{n} Ltd', 70], ['{n} Limited', 20], ['{n} LLP', 10]],
  },
};

function baseName(style: Style, rng: Rng): string {
  const s = rng.pick(style.surnames);
  const t = rng.pick(style.trades);
  switch (rng.int(5)) {
    case 0:
      return `${t} ${s}`;
    case 1:
      return `${s} ${t}`;
    case 2:
      return `${rng.pick(style.places)} ${t}`;
    case 3: {
      const s2 = rng.pick(style.surnames);
      return s2 === s ? `${s} ${t}` : `${s} & ${s2}`;
    }
    default:
      return `${s} ${t} ${rng.pick(style.places)}`;
  }
}

/** A company or public body name in the style of `country`. */
export function companyName(country: string, rng: Rng, publicSector = false): string {
  const style = STYLES[country] ?? STYLES.GB!;
  let forms = style.forms;
  if (publicSector) {
    const pub = forms.filter(([f]) => f.includes('{p}'));
    if (pub.length > 0) forms = pub;
  }
  const form = rng.weighted(forms);
  return form.replace('{n}', () => baseName(style, rng)).replace('{p}', () => rng.pick(style.places));
}

/** A renamed card name: a rebrand or a change of legal form, clearly different from `name`. */
export function renamedCompany(name: string, country: string, rng: Rng): string {
  const style = STYLES[country] ?? STYLES.GB!;
  const variants = [`${name.replace(/\s+\S+$/, '')} Group`, `${rng.pick(style.places)} ${name}`, `${name} (${rng.pick(style.places)})`];
  const out = rng.pick(variants).trim();
  return out === name ? `${name} Holding` : out;
}

const PROVIDER_STEMS = ['Fact', 'Invo', 'Docu', 'Tradel', 'Exflo', 'Billi', 'Payla', 'Nexa', 'Orbi', 'Clario', 'Ledgr', 'Fluxi', 'Konto', 'Arkiv', 'Balti', 'Nordi', 'Alpin', 'Lumen', 'Vero', 'Stella', 'Quanto', 'Sento', 'Mercu', 'Talli', 'Rivo', 'Zenta', 'Axia', 'Brio', 'Cora', 'Delta', 'Ecro', 'Fyra', 'Gala', 'Hexa', 'Iris', 'Jura', 'Kavo', 'Lyra', 'Mira', 'Nova'];
const PROVIDER_SUFFIXES = ['link', 'flow', 'hub', 'net', 'doc', 'xchange', 'gate', 'bridge', 'point', 'connect', 'mail', 'wave', 'port', 'sync', 'route'];
const PROVIDER_FORMS: Record<string, string> = {
  BE: 'NV', NO: 'AS', SE: 'AB', NL: 'B.V.', DK: 'A/S', DE: 'GmbH', FR: 'SAS', IT: 'S.r.l.', FI: 'Oy', AT: 'GmbH', AU: 'Pty Ltd', SG: 'Pte. Ltd.',
  NZ: 'Limited', JP: 'K.K.', IE: 'Limited', LU: 'S.A.', PL: 'Sp. z o.o.', EE: 'OÜ', GB: 'Ltd',
};
const TLDS: Record<string, string> = {
  BE: 'be', NO: 'no', SE: 'se', NL: 'nl', DK: 'dk', DE: 'de', FR: 'fr', IT: 'it', FI: 'fi', AT: 'at', AU: 'com.au', SG: 'com.sg',
  NZ: 'co.nz', JP: 'co.jp', IE: 'ie', LU: 'lu', PL: 'pl', EE: 'ee', GB: 'co.uk',
};

export interface ProviderNaming {
  tradeName: string;
  legalName: string;
  stem: string;
  tld: string;
}

/** A fictional e-invoicing provider: trade name (e.g. "Docugate"), legal name ("Docugate NV") and domain parts. */
export function providerName(country: string, international: boolean, rng: Rng): ProviderNaming {
  const stem = `${rng.pick(PROVIDER_STEMS)}${rng.pick(PROVIDER_SUFFIXES)}`;
  const tradeName = stem;
  const legal = `${stem} ${international ? rng.pick(['Group', 'International', 'Europe']) + ' ' : ''}${PROVIDER_FORMS[country] ?? 'Ltd'}`;
  const tld = international ? rng.pick(['com', 'eu', 'io', 'net']) : (TLDS[country] ?? 'com');
  return { tradeName, legalName: legal, stem: stem.toLowerCase(), tld };
}

/** Local subsidiary name for a provider's seat in another country. */
export function subsidiaryName(stem: string, country: string): string {
  const form = PROVIDER_FORMS[country] ?? 'Ltd';
  const cap = stem.charAt(0).toUpperCase() + stem.slice(1);
  const local: Record<string, string> = { NO: 'Norge', SE: 'Sverige', DK: 'Danmark', DE: 'Deutschland', FR: 'France', IT: 'Italia', NL: 'Nederland', FI: 'Suomi', AT: 'Österreich', BE: 'Belgium', AU: 'Australia', SG: 'Singapore' };
  return `${cap} ${local[country] ?? country} ${form}`;
}

export function slugify(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
}
