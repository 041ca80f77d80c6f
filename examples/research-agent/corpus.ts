/** A small bundled corpus the research agent's local search tool searches. */
export interface CorpusDocument {
  id: string;
  title: string;
  text: string;
}

export const corpus: readonly CorpusDocument[] = [
  {
    id: 'sol-1',
    title: 'Solid-state batteries',
    text: 'Solid-state batteries replace the liquid electrolyte with a solid one. They promise higher energy density and lower fire risk, but manufacturing at scale remains expensive.',
  },
  {
    id: 'sol-2',
    title: 'Sodium-ion batteries',
    text: 'Sodium-ion batteries use abundant sodium instead of lithium. Their energy density is lower, but they are cheaper and perform well in cold weather, which suits grid storage.',
  },
  {
    id: 'grid-1',
    title: 'Grid storage economics',
    text: 'Grid storage is judged by cost per kilowatt-hour over the lifetime of the system. Cycle life matters more than energy density for stationary batteries.',
  },
  {
    id: 'recycle-1',
    title: 'Battery recycling',
    text: 'Recycling recovers lithium, nickel and cobalt from spent cells. Hydrometallurgical processes recover over ninety percent of the metals.',
  },
  {
    id: 'h2-1',
    title: 'Hydrogen for seasonal storage',
    text: 'Hydrogen can store energy across seasons, but round-trip efficiency is around thirty to forty percent, far below batteries.',
  },
  {
    id: 'ev-1',
    title: 'Electric vehicle charging',
    text: 'Fast charging stresses battery cells; thermal management and charging curves limit degradation in electric vehicles.',
  },
];
